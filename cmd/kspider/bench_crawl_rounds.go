package main

import "sort"

// medianFigures is the median crawl of fs (at least one): each rate, time
// and size is the median of its own, since a noisy round can be slow in
// one and not another; the counts are those of the round with the median
// time, and the crawl counts as finished only if every round finished.
func medianFigures(fs []crawlFigures) crawlFigures {
	byTime := append([]crawlFigures(nil), fs...)
	sort.Slice(byTime, func(i, j int) bool { return byTime[i].Seconds < byTime[j].Seconds })
	m := byTime[len(byTime)/2]
	m.PagesPerS = medianOf(fs, func(f crawlFigures) float64 { return f.PagesPerS })
	m.MBPerS = medianOf(fs, func(f crawlFigures) float64 { return f.MBPerS })
	m.CPUMsPerPage = medianOf(fs, func(f crawlFigures) float64 { return f.CPUMsPerPage })
	m.PeakRSSMB = medianOf(fs, func(f crawlFigures) float64 { return f.PeakRSSMB })
	for _, f := range fs {
		m.Finished = m.Finished && f.Finished
	}
	return m
}

// medianRatios is the median of each ratio over the rounds (at least one).
func medianRatios(rs []crawlRatios) crawlRatios {
	return crawlRatios{PagesPerS: medianOf(rs, func(r crawlRatios) float64 { return r.PagesPerS }),
		CPUPerPage: medianOf(rs, func(r crawlRatios) float64 { return r.CPUPerPage }),
		PeakRSS:    medianOf(rs, func(r crawlRatios) float64 { return r.PeakRSS })}
}

// medianOf is the median of get over xs (not empty): the middle value, or
// the mean of the two middle ones.
func medianOf[T any](xs []T, get func(T) float64) float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = get(x)
	}
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
