# gnuplot script written by `zepsim experiment report`; renders zeppelin-fig8.png and zeppelin-fig8.svg
# from zeppelin-fig8.dat (run it in this folder: gnuplot zeppelin-fig8.gp).
set datafile separator "\t"
set datafile missing "?"
set title "Zeppelin Fig. 8: end-to-end throughput, models x datasets x context lengths (Cluster A)" noenhanced
set ylabel "speedup over TE CP" noenhanced
set grid ytics
set key outside right top noenhanced
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics rotate by -40 scale 0 noenhanced
set yrange [0:*]
set terminal pngcairo size 1340,560 font "sans,10"
set output "zeppelin-fig8.png"
plot for [i=2:5] "zeppelin-fig8.dat" using i:xtic(1) title columnheader(i)
set terminal svg size 1340,560 font "sans,10"
set output "zeppelin-fig8.svg"
plot for [i=2:5] "zeppelin-fig8.dat" using i:xtic(1) title columnheader(i)
unset output
