# gnuplot script written by `zepsim experiment report`; renders dyncp-headline.png and dyncp-headline.svg
# from dyncp-headline.dat (run it in this folder: gnuplot dyncp-headline.gp). zepsim names the
# files with -e "dat='...'; out_png='...'; out_svg='...'" to write them
# atomically.
if (!exists("dat")) dat = "dyncp-headline.dat"
if (!exists("out_png")) out_png = "dyncp-headline.png"
if (!exists("out_svg")) out_svg = "dyncp-headline.svg"
set datafile separator "\t"
set datafile missing "?"
set title "Megatron-Core Dynamic CP (reconstructed) over static CP on Megatron's own benchmark (lognormal\nlengths up to 8K, CP 4, 8-64 GPUs)" noenhanced
set ylabel "speedup over static CP 4" noenhanced
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
0.166667	1.412
1.16667	1.212
2.16667	1.375
3.16667	1.495
EOD
set arrow 1 from graph 0, first 1.369 to graph 1, first 1.369 nohead dt 2 lw 1.5 lc rgb "#b03030" front
set arrow 2 from graph 0, first 1.48 to graph 1, first 1.48 nohead dt 2 lw 1.5 lc rgb "#3050b0" front
set terminal pngcairo size 900,560 font "sans,10"
set output out_png
plot for [i=2:3] dat using i:xtic(1) title columnheader(i), \
     $paper using 1:2 with points pt 9 ps 2 lc rgb "#b03030" title "paper", \
     NaN with lines dt 2 lw 1.5 lc rgb "#b03030" title "paper, geomean: Dynamic CP over static CP, geometric mean of 8-6... = 1.369", \
     NaN with lines dt 2 lw 1.5 lc rgb "#3050b0" title "paper, max: Dynamic CP, largest speedup over static CP = 1.48"
set terminal svg size 900,560 font "sans,10"
set output out_svg
plot for [i=2:3] dat using i:xtic(1) title columnheader(i), \
     $paper using 1:2 with points pt 9 ps 2 lc rgb "#b03030" title "paper", \
     NaN with lines dt 2 lw 1.5 lc rgb "#b03030" title "paper, geomean: Dynamic CP over static CP, geometric mean of 8-6... = 1.369", \
     NaN with lines dt 2 lw 1.5 lc rgb "#3050b0" title "paper, max: Dynamic CP, largest speedup over static CP = 1.48"
unset output
