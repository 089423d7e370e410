# gnuplot script written by `zepsim experiment report`; renders zeppelin-fig9.png and zeppelin-fig9.svg
# from zeppelin-fig9.dat (run it in this folder: gnuplot zeppelin-fig9.gp).
set datafile separator "\t"
set datafile missing "?"
set title "Zeppelin Fig. 9: scaling LLaMA-3B on Cluster A, 16 to 128 GPUs" noenhanced
set ylabel "throughput (tokens/s)" noenhanced
set grid ytics
set key outside right top noenhanced
set xlabel "GPUs" noenhanced
set logscale x 2
set yrange [0:*]
set terminal pngcairo size 900,560 font "sans,10"
set output "zeppelin-fig9.png"
plot "zeppelin-fig9.dat" index 0 using 1:2 with linespoints lw 2 title "TE CP", \
     "zeppelin-fig9.dat" index 1 using 1:2 with linespoints lw 2 title "LLaMA CP", \
     "zeppelin-fig9.dat" index 2 using 1:2 with linespoints lw 2 title "Hybrid DP", \
     "zeppelin-fig9.dat" index 3 using 1:2 with linespoints lw 2 title "Zeppelin"
set terminal svg size 900,560 font "sans,10"
set output "zeppelin-fig9.svg"
plot "zeppelin-fig9.dat" index 0 using 1:2 with linespoints lw 2 title "TE CP", \
     "zeppelin-fig9.dat" index 1 using 1:2 with linespoints lw 2 title "LLaMA CP", \
     "zeppelin-fig9.dat" index 2 using 1:2 with linespoints lw 2 title "Hybrid DP", \
     "zeppelin-fig9.dat" index 3 using 1:2 with linespoints lw 2 title "Zeppelin"
unset output
