# gnuplot script written by `zepsim experiment report`; renders flexsp-headline.png and flexsp-headline.svg
# from flexsp-headline.dat (run it in this folder: gnuplot flexsp-headline.gp). zepsim names the
# files with -e "dat='...'; out_png='...'; out_svg='...'" to write them
# atomically.
if (!exists("dat")) dat = "flexsp-headline.dat"
if (!exists("out_png")) out_png = "flexsp-headline.png"
if (!exists("out_svg")) out_svg = "flexsp-headline.svg"
set datafile separator "\t"
set datafile missing "?"
set title "FlexSP (reconstructed) against DeepSpeed-Ulysses and Megatron-LM CP on FlexSP's own headline setup\n(GPT-6.7B, Wikipedia, max sequence 192K, 64 A100s)" noenhanced
set ylabel "speedup over Megatron-LM (te-cp, CP 32)" noenhanced
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
0.3	1.98
0.1	1.151
EOD
set terminal pngcairo size 900,560 font "sans,10"
set output out_png
plot for [i=2:5] dat using i:xtic(1) title columnheader(i), \
     $paper using 1:2 with points pt 9 ps 2 lc rgb "#b03030" title "paper"
set terminal svg size 900,560 font "sans,10"
set output out_svg
plot for [i=2:5] dat using i:xtic(1) title columnheader(i), \
     $paper using 1:2 with points pt 9 ps 2 lc rgb "#b03030" title "paper"
unset output
