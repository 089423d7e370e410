# gnuplot script written by `zepsim experiment report`; renders zeppelin-fig9.png and zeppelin-fig9.svg
# from zeppelin-fig9.dat (run it in this folder: gnuplot zeppelin-fig9.gp). zepsim names the
# files with -e "dat='...'; out_png='...'; out_svg='...'" to write them
# atomically.
if (!exists("dat")) dat = "zeppelin-fig9.dat"
if (!exists("out_png")) out_png = "zeppelin-fig9.png"
if (!exists("out_svg")) out_svg = "zeppelin-fig9.svg"
set datafile separator "\t"
set datafile missing "?"
set title "Zeppelin Fig. 9: scaling LLaMA-3B on Cluster A, 16 to 128 GPUs" noenhanced
set ylabel "throughput (tokens/s)" noenhanced
set grid ytics
set key outside center bottom horizontal noenhanced
set offsets 0, 0, graph 0.08, 0
set xlabel "GPUs" noenhanced
set logscale x 2
set yrange [0:*]
$paper << EOD
EOD
set terminal pngcairo size 900,560 font "sans,10"
set output out_png
plot dat index 0 using 1:2 with linespoints lw 2 title "TE CP", \
     dat index 1 using 1:2 with linespoints lw 2 title "LLaMA CP", \
     dat index 2 using 1:2 with linespoints lw 2 title "Hybrid DP", \
     dat index 3 using 1:2 with linespoints lw 2 title "Zeppelin", \
     dat index 4 using 1:2 with linespoints lw 2 title "Ulysses", \
     dat index 5 using 1:2 with linespoints lw 2 title "USP", \
     dat index 6 using 1:2 with linespoints lw 2 title "auto (ours)"
set terminal svg size 900,560 font "sans,10"
set output out_svg
plot dat index 0 using 1:2 with linespoints lw 2 title "TE CP", \
     dat index 1 using 1:2 with linespoints lw 2 title "LLaMA CP", \
     dat index 2 using 1:2 with linespoints lw 2 title "Hybrid DP", \
     dat index 3 using 1:2 with linespoints lw 2 title "Zeppelin", \
     dat index 4 using 1:2 with linespoints lw 2 title "Ulysses", \
     dat index 5 using 1:2 with linespoints lw 2 title "USP", \
     dat index 6 using 1:2 with linespoints lw 2 title "auto (ours)"
unset output
