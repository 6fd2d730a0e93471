#!/usr/bin/env bash
# Draw results/chart.png from the data files a benchmark run wrote:
# bulk.dat (candidate, million IDs/s) and inserts.dat (primary key,
# thousand rows/s).  Called by run.sh, and by uuid.sh with the prefix
# uuid- (uuid-bulk.dat, uuid-inserts.dat -> uuid-chart.png); run it alone
# to redraw a chart.
#
#   bash test/bench/chart.sh <results dir> <bulk rounds> <insert rounds> <rows per insert> <prefill rows> [prefix]
set -eu
out=$1 bulk_rounds=$2 insert_rounds=$3 rows=$4 prefill=$5 prefix=${6:-}
command -v gnuplot >/dev/null || { echo "gnuplot not found: no chart" >&2; exit 0; }
gnuplot <<GP
set terminal pngcairo noenhanced size 1200,450 font "sans,11"
set output "$out/${prefix}chart.png"
set multiplot layout 1,2
set style fill solid 0.8
set boxwidth 0.6
set yrange [0:*]
set offsets 0, 0, graph 0.12, 0
set xtics rotate by -25 scale 0
set grid ytics
unset key
set title "Bulk: million IDs per second in one backend\n(median of $bulk_rounds rounds; higher is better)"
plot "$out/${prefix}bulk.dat" using 0:2:xtic(1) with boxes lc rgb "#3b7dd8", "" using 0:2:(sprintf("%.2f", \$2)) with labels offset 0,0.8
set title "Inserts: thousand rows per second, 4 clients,\n$rows rows per transaction, after $prefill rows (median of $insert_rounds rounds)"
plot "$out/${prefix}inserts.dat" using 0:2:xtic(1) with boxes lc rgb "#d8893b", "" using 0:2:(sprintf("%.1f", \$2)) with labels offset 0,0.8
unset multiplot
GP
