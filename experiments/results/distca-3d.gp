# gnuplot script written by `zepsim experiment report`; renders distca-3d.png and distca-3d.svg
# from distca-3d.dat (run it in this folder: gnuplot distca-3d.gp). zepsim names the
# files with -e "dat='...'; out_png='...'; out_svg='...'" to write them
# atomically.
if (!exists("dat")) dat = "distca-3d.dat"
if (!exists("out_png")) out_png = "distca-3d.png"
if (!exists("out_svg")) out_svg = "distca-3d.svg"
set datafile separator "\t"
set datafile missing "?"
set title "DistCA (reconstructed): core-attention disaggregation against WLB-ideal, 3D (LLaMA-3-8B, 64 H200\nGPUs, 1M tokens)" noenhanced
set ylabel "speedup over WLB-ideal (CP=4)" noenhanced
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
