# gnuplot script written by `zepsim experiment report`; renders bytescale-headline.png and bytescale-headline.svg
# from bytescale-headline.dat (run it in this folder: gnuplot bytescale-headline.gp). zepsim names the
# files with -e "dat='...'; out_png='...'; out_svg='...'" to write them
# atomically.
if (!exists("dat")) dat = "bytescale-headline.dat"
if (!exists("out_png")) out_png = "bytescale-headline.png"
if (!exists("out_svg")) out_svg = "bytescale-headline.svg"
set datafile separator "\t"
set datafile missing "?"
set title "ByteScale (reconstructed) over a static CP mesh on its own setup as far as the presets go (LLaMA-7B,\nGitHub-like lengths, 256K-2048K context, 64 H100s)" noenhanced
set ylabel "speedup over static CP 16" noenhanced
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
set arrow 1 from graph 0, first 7.89 to graph 1, first 7.89 nohead dt 2 lw 1.5 lc rgb "#b03030" front
set terminal pngcairo size 900,560 font "sans,10"
set output out_png
plot for [i=2:5] dat using i:xtic(1) title columnheader(i), \
     NaN with lines dt 2 lw 1.5 lc rgb "#b03030" title "paper, max: ByteScale, largest speedup over the static mesh = 7.89"
set terminal svg size 900,560 font "sans,10"
set output out_svg
plot for [i=2:5] dat using i:xtic(1) title columnheader(i), \
     NaN with lines dt 2 lw 1.5 lc rgb "#b03030" title "paper, max: ByteScale, largest speedup over the static mesh = 7.89"
unset output
