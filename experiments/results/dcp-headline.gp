# gnuplot script written by `zepsim experiment report`; renders dcp-headline.png and dcp-headline.svg
# from dcp-headline.dat (run it in this folder: gnuplot dcp-headline.gp). zepsim names the
# files with -e "dat='...'; out_png='...'; out_svg='...'" to write them
# atomically.
if (!exists("dat")) dat = "dcp-headline.dat"
if (!exists("out_png")) out_png = "dcp-headline.png"
if (!exists("out_svg")) out_svg = "dcp-headline.svg"
set datafile separator "\t"
set datafile missing "?"
set title "DCP (reconstructed) over TransformerEngine CP end to end on DCP's own setup (Llama-3-8B-like GPT, 8\np4d nodes, TP 4, LongAlign-like lengths, 16K-128K tokens per batch)" noenhanced
set ylabel "speedup over TE CP 16" noenhanced
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
set arrow 1 from graph 0, first 0.94 to graph 1, first 0.94 nohead dt 2 lw 1.5 lc rgb "#b03030" front
set arrow 2 from graph 0, first 1.16 to graph 1, first 1.16 nohead dt 2 lw 1.5 lc rgb "#3050b0" front
set terminal pngcairo size 900,560 font "sans,10"
set output out_png
plot for [i=2:3] dat using i:xtic(1) title columnheader(i), \
     NaN with lines dt 2 lw 1.5 lc rgb "#b03030" title "paper, min: DCP over Megatron TE CP end to end, causal, smal... = 0.94", \
     NaN with lines dt 2 lw 1.5 lc rgb "#3050b0" title "paper, max: DCP over Megatron TE CP end to end, causal, larg... = 1.16"
set terminal svg size 900,560 font "sans,10"
set output out_svg
plot for [i=2:3] dat using i:xtic(1) title columnheader(i), \
     NaN with lines dt 2 lw 1.5 lc rgb "#b03030" title "paper, min: DCP over Megatron TE CP end to end, causal, smal... = 0.94", \
     NaN with lines dt 2 lw 1.5 lc rgb "#3050b0" title "paper, max: DCP over Megatron TE CP end to end, causal, larg... = 1.16"
unset output
