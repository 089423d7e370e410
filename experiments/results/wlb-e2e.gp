# gnuplot script written by `zepsim experiment report`; renders wlb-e2e.png and wlb-e2e.svg
# from wlb-e2e.dat (run it in this folder: gnuplot wlb-e2e.gp).
set datafile separator "\t"
set datafile missing "?"
set title "WLB-LLM: end-to-end speedup over Plain-4D by context length (LLaMA-7B, 4D parallel)" noenhanced
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
set output "wlb-e2e.png"
plot for [i=2:4] "wlb-e2e.dat" using i:xtic(1) title columnheader(i)
set terminal svg size 900,560 font "sans,10"
set output "wlb-e2e.svg"
plot for [i=2:4] "wlb-e2e.dat" using i:xtic(1) title columnheader(i)
unset output
