# gnuplot script written by `zepsim experiment report`; renders zeppelin-fig8.png and zeppelin-fig8.svg
# from zeppelin-fig8.dat (run it in this folder: gnuplot zeppelin-fig8.gp). zepsim names the
# files with -e "dat='...'; out_png='...'; out_svg='...'" to write them
# atomically.
if (!exists("dat")) dat = "zeppelin-fig8.dat"
if (!exists("out_png")) out_png = "zeppelin-fig8.png"
if (!exists("out_svg")) out_svg = "zeppelin-fig8.svg"
set datafile separator "\t"
set datafile missing "?"
set title "Zeppelin Fig. 8: end-to-end throughput, models x datasets x context lengths (Cluster A)" noenhanced
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
$paper << EOD
EOD
set arrow 1 from graph 0, first 2.8 to graph 1, first 2.8 nohead dt 2 lw 1.5 lc rgb "#b03030" front
set arrow 2 from graph 0, first 6.6 to graph 1, first 6.6 nohead dt 2 lw 1.5 lc rgb "#3050b0" front
set terminal pngcairo size 1760,560 font "sans,10"
set output out_png
plot for [i=2:7] dat using i:xtic(1) title columnheader(i), \
     NaN with lines dt 2 lw 1.5 lc rgb "#b03030" title "paper, mean: average speedup of Zeppelin over TE CP, all case... = 2.8", \
     NaN with lines dt 2 lw 1.5 lc rgb "#3050b0" title "paper, max: maximum speedup of Zeppelin over TE CP = 6.6"
set terminal svg size 1760,560 font "sans,10"
set output out_svg
plot for [i=2:7] dat using i:xtic(1) title columnheader(i), \
     NaN with lines dt 2 lw 1.5 lc rgb "#b03030" title "paper, mean: average speedup of Zeppelin over TE CP, all case... = 2.8", \
     NaN with lines dt 2 lw 1.5 lc rgb "#3050b0" title "paper, max: maximum speedup of Zeppelin over TE CP = 6.6"
unset output
