# gnuplot script written by `zepsim experiment report`; renders wlb-e2e.png and wlb-e2e.svg
# from wlb-e2e.dat (run it in this folder: gnuplot wlb-e2e.gp). zepsim names the
# files with -e "dat='...'; out_png='...'; out_svg='...'" to write them
# atomically.
if (!exists("dat")) dat = "wlb-e2e.dat"
if (!exists("out_png")) out_png = "wlb-e2e.png"
if (!exists("out_svg")) out_svg = "wlb-e2e.svg"
set datafile separator "\t"
set datafile missing "?"
set title "WLB-LLM: end-to-end speedup over Plain-4D by context length (LLaMA-7B, 4D parallel, steady state)" noenhanced
set ylabel "speedup over Plain-4D" noenhanced
set grid ytics
set key outside center bottom horizontal noenhanced
set offsets 0, 0, graph 0.08, 0
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics rotate by -40 scale 0 noenhanced
set yrange [0:*]
$paper << EOD
0.25	1.15
1.25	1.3
2.25	1.4
EOD
set arrow 1 from graph 0, first 1.23 to graph 1, first 1.23 nohead dt 2 lw 1.5 lc rgb "#b03030" front
set arrow 2 from graph 0, first 1.034 to graph 1, first 1.034 nohead dt 2 lw 1.5 lc rgb "#3050b0" front
set terminal pngcairo size 900,560 font "sans,10"
set output out_png
plot for [i=2:4] dat using i:xtic(1) title columnheader(i), \
     $paper using 1:2 with points pt 9 ps 2 lc rgb "#b03030" title "paper", \
     NaN with lines dt 2 lw 1.5 lc rgb "#b03030" title "paper, mean: WLB-LLM average speedup over Plain-4D = 1.23", \
     NaN with lines dt 2 lw 1.5 lc rgb "#3050b0" title "paper, mean: Fixed-4D speedup over Plain-4D (mean) = 1.034"
set terminal svg size 900,560 font "sans,10"
set output out_svg
plot for [i=2:4] dat using i:xtic(1) title columnheader(i), \
     $paper using 1:2 with points pt 9 ps 2 lc rgb "#b03030" title "paper", \
     NaN with lines dt 2 lw 1.5 lc rgb "#b03030" title "paper, mean: WLB-LLM average speedup over Plain-4D = 1.23", \
     NaN with lines dt 2 lw 1.5 lc rgb "#3050b0" title "paper, mean: Fixed-4D speedup over Plain-4D (mean) = 1.034"
unset output
