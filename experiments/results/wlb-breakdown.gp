# gnuplot script written by `zepsim experiment report`; renders wlb-breakdown.png and wlb-breakdown.svg
# from wlb-breakdown.dat (run it in this folder: gnuplot wlb-breakdown.gp). zepsim names the
# files with -e "dat='...'; out_png='...'; out_svg='...'" to write them
# atomically.
if (!exists("dat")) dat = "wlb-breakdown.dat"
if (!exists("out_png")) out_png = "wlb-breakdown.png"
if (!exists("out_svg")) out_svg = "wlb-breakdown.svg"
set datafile separator "\t"
set datafile missing "?"
set title "WLB-LLM: speedup breakdown, LLaMA-7B at 128K (64 GPUs, TP8 CP2 PP4), steady state" noenhanced
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
-0.125	1.02
0	1.05
0.125	1.28
0.25	1.33
EOD
set terminal pngcairo size 900,560 font "sans,10"
set output out_png
plot for [i=2:8] dat using i:xtic(1) title columnheader(i), \
     $paper using 1:2 with points pt 9 ps 2 lc rgb "#b03030" title "paper"
set terminal svg size 900,560 font "sans,10"
set output out_svg
plot for [i=2:8] dat using i:xtic(1) title columnheader(i), \
     $paper using 1:2 with points pt 9 ps 2 lc rgb "#b03030" title "paper"
unset output
