# gnuplot script written by `zepsim experiment report`; renders flashcp-headline.png and flashcp-headline.svg
# from flashcp-headline.dat (run it in this folder: gnuplot flashcp-headline.gp). zepsim names the
# files with -e "dat='...'; out_png='...'; out_svg='...'" to write them
# atomically.
if (!exists("dat")) dat = "flashcp-headline.dat"
if (!exists("out_png")) out_png = "flashcp-headline.png"
if (!exists("out_svg")) out_svg = "flashcp-headline.svg"
set datafile separator "\t"
set datafile missing "?"
set title "FlashCP (reconstructed): speedup over per-document CP across datasets (LLaMA-3-8B, 16 GPUs)" noenhanced
set ylabel "speedup over per-document CP" noenhanced
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
set arrow 1 from graph 0, first 1.63 to graph 1, first 1.63 nohead dt 2 lw 1.5 lc rgb "#b03030" front
set terminal pngcairo size 900,560 font "sans,10"
set output out_png
plot for [i=2:5] dat using i:xtic(1) title columnheader(i), \
     NaN with lines dt 2 lw 1.5 lc rgb "#b03030" title "paper, max: FlashCP, largest speedup over state-of-the-art C... = 1.63"
set terminal svg size 900,560 font "sans,10"
set output out_svg
plot for [i=2:5] dat using i:xtic(1) title columnheader(i), \
     NaN with lines dt 2 lw 1.5 lc rgb "#b03030" title "paper, max: FlashCP, largest speedup over state-of-the-art C... = 1.63"
unset output
