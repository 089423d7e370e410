# gnuplot script written by `zepsim experiment report`; renders zeppelin-fig10.png and zeppelin-fig10.svg
# from zeppelin-fig10.dat (run it in this folder: gnuplot zeppelin-fig10.gp). zepsim names the
# files with -e "dat='...'; out_png='...'; out_svg='...'" to write them
# atomically.
if (!exists("dat")) dat = "zeppelin-fig10.dat"
if (!exists("out_png")) out_png = "zeppelin-fig10.png"
if (!exists("out_svg")) out_svg = "zeppelin-fig10.svg"
set datafile separator "\t"
set datafile missing "?"
set title "Zeppelin Fig. 10: Cluster A (4 NICs per node) vs Cluster B (8 NICs per node)" noenhanced
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
set terminal pngcairo size 900,560 font "sans,10"
set output out_png
plot for [i=2:8] dat using i:xtic(1) title columnheader(i)
set terminal svg size 900,560 font "sans,10"
set output out_svg
plot for [i=2:8] dat using i:xtic(1) title columnheader(i)
unset output
