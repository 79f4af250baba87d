set terminal pngcairo size 1280,900 font 'Sans,11'
set output 'plot.png'
set multiplot layout 2,1 title 'Latency histogram: stress (load: stress-ng --cpu 2 --io 2 --vm 2 --vm-bytes 64 --timeout 160s) on vm, 6.1.0-rt' noenhanced font ',13'
set grid xtics ytics
set logscale y
set yrange [0.8:*]
set ylabel 'Latency samples (log)'
set key inside top right noenhanced font ',9' samplen 1.5 spacing 0.9 maxrows 8 box opaque
set xrange [0:27]
set xlabel 'Latency (us), body: 0 to 27 us'
plot 't0.dat' using 1:2 with lines lw 1.5 lc 1 title 'T0 CPU0 max 24', \
     't1.dat' using 1:2 with lines lw 1.5 lc 2 title 'T1 CPU1 max 1530 (3 over 800 us)', \
     NaN with lines dt 2 lw 1.5 lc rgb 'black' title 'published max (dashed)'
unset arrow
unset label
unset key
set xrange [0:831]
set xlabel 'Latency (us), full range: 0 to 831 us'
set arrow from 74, graph 0 to 74, graph 1 nohead dt 2 lw 1.5 lc 1
set label 'T0 published 74' at 74, graph 0.94 left offset 0.5,0 font ',8' tc lt 1
set arrow from 60, graph 0 to 60, graph 1 nohead dt 2 lw 1.5 lc 2
set label 'T1 published 60' at 60, graph 0.88 left offset 0.5,0 font ',8' tc lt 2
plot 't0.dat' using 1:2 every 2 with impulses lw 1.5 lc 1 notitle, \
     't1.dat' using 1:2 every 2 with impulses lw 1.5 lc 2 notitle
unset multiplot
