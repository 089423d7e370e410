# gnuplot script written by `zepsim experiment report`; renders wlb-imbalance.png and wlb-imbalance.svg
# from wlb-imbalance.dat (run it in this folder: gnuplot wlb-imbalance.gp). zepsim names the
# files with -e "dat='...'; out_png='...'; out_svg='...'" to write them
# atomically.
if (!exists("dat")) dat = "wlb-imbalance.dat"
if (!exists("out_png")) out_png = "wlb-imbalance.png"
if (!exists("out_svg")) out_svg = "wlb-imbalance.svg"
set datafile separator "\t"
set datafile missing "?"
set title "WLB-LLM Table 2: imbalance degree of packing methods, LLaMA-7B at 128K (64 GPUs, TP8 CP2 PP4)" noenhanced
set ylabel "imbalance degree" noenhanced
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
-0.388889	1.44
-0.277778	1.41
-0.166667	1.22
-0.0555556	1.11
0.0555556	1.08
0.166667	1.24
0.277778	1.05
0.388889	1.05
EOD
set terminal pngcairo size 900,560 font "sans,10"
set output out_png
plot for [i=2:9] dat using i:xtic(1) title columnheader(i), \
     $paper using 1:2 with points pt 9 ps 2 lc rgb "#b03030" title "paper"
set terminal svg size 900,560 font "sans,10"
set output out_svg
plot for [i=2:9] dat using i:xtic(1) title columnheader(i), \
     $paper using 1:2 with points pt 9 ps 2 lc rgb "#b03030" title "paper"
unset output
