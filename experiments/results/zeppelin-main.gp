# gnuplot script written by `zepsim experiment report`; renders zeppelin-main.png and zeppelin-main.svg
# from zeppelin-main.dat (run it in this folder: gnuplot zeppelin-main.gp). zepsim names the
# files with -e "dat='...'; out_png='...'; out_svg='...'" to write them
# atomically.
if (!exists("dat")) dat = "zeppelin-main.dat"
if (!exists("out_png")) out_png = "zeppelin-main.png"
if (!exists("out_svg")) out_svg = "zeppelin-main.svg"
set datafile separator "\t"
set datafile missing "?"
set title "Zeppelin on Cluster A, 16 nodes: throughput and speedup over the baselines, with the routing and\nremapping ablations" noenhanced
set ylabel "speedup over TE CP" noenhanced
set grid ytics
set key outside center bottom horizontal noenhanced
set offsets 0, 0, graph 0.08, 0
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics rotate by -40 scale 0 noenhanced
set yrange [0:*]
set linetype 9 lc rgb "#7f7f7f"
$paper << EOD
EOD
set arrow 1 from graph 0, first 2.8 to graph 1, first 2.8 nohead dt 2 lw 1.5 lc rgb "#b03030" front
set terminal pngcairo size 900,560 font "sans,10"
set output out_png
plot for [i=2:10] dat using i:xtic(1) title columnheader(i), \
     NaN with lines dt 2 lw 1.5 lc rgb "#b03030" title "paper, mean: mean speedup of Zeppelin over TE CP, all of Fig.... = 2.8"
set terminal svg size 900,560 font "sans,10"
set output out_svg
plot for [i=2:10] dat using i:xtic(1) title columnheader(i), \
     NaN with lines dt 2 lw 1.5 lc rgb "#b03030" title "paper, mean: mean speedup of Zeppelin over TE CP, all of Fig.... = 2.8"
unset output
