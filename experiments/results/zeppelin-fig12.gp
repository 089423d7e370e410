# gnuplot script written by `zepsim experiment report`; renders zeppelin-fig12.png and zeppelin-fig12.svg
# from zeppelin-fig12.dat (run it in this folder: gnuplot zeppelin-fig12.gp). zepsim names the
# files with -e "dat='...'; out_png='...'; out_svg='...'" to write them
# atomically.
if (!exists("dat")) dat = "zeppelin-fig12.dat"
if (!exists("out_png")) out_png = "zeppelin-fig12.png"
if (!exists("out_svg")) out_svg = "zeppelin-fig12.svg"
set datafile separator "\t"
set datafile missing "?"
set title "Zeppelin Fig. 12: a cross-node ring transfer of TE CP and of Zeppelin's routing, one 64K sequence\nand many short sequences (16 ranks, 2 nodes)" noenhanced
set ylabel "cross-node ring round, forward pass (us, mean)" noenhanced
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
-0.166667	2180
0.166667	411
EOD
set terminal pngcairo size 900,560 font "sans,10"
set output out_png
plot for [i=2:3] dat using i:xtic(1) title columnheader(i), \
     $paper using 1:2 with points pt 9 ps 2 lc rgb "#b03030" title "paper"
set terminal svg size 900,560 font "sans,10"
set output out_svg
plot for [i=2:3] dat using i:xtic(1) title columnheader(i), \
     $paper using 1:2 with points pt 9 ps 2 lc rgb "#b03030" title "paper"
unset output
