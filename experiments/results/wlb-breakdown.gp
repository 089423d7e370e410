# gnuplot script written by `zepsim experiment report`; renders wlb-breakdown.png and wlb-breakdown.svg
# from wlb-breakdown.dat (run it in this folder: gnuplot wlb-breakdown.gp).
set datafile separator "\t"
set datafile missing "?"
set title "WLB-LLM: speedup breakdown, LLaMA-7B at 128K (64 GPUs, TP8 CP2 PP4)" noenhanced
set ylabel "speedup over Plain-4D" noenhanced
set grid ytics
set key outside right top noenhanced
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics rotate by -40 scale 0 noenhanced
set yrange [0:*]
set terminal pngcairo size 900,560 font "sans,10"
set output "wlb-breakdown.png"
plot for [i=2:6] "wlb-breakdown.dat" using i:xtic(1) title columnheader(i)
set terminal svg size 900,560 font "sans,10"
set output "wlb-breakdown.svg"
plot for [i=2:6] "wlb-breakdown.dat" using i:xtic(1) title columnheader(i)
unset output
