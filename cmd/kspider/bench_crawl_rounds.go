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
	med := func(get func(crawlFigures) float64) float64 {
		v := make([]float64, len(fs))
		for i, f := range fs {
			v[i] = get(f)
		}
		return median(v)
	}
	m.PagesPerS = med(func(f crawlFigures) float64 { return f.PagesPerS })
	m.MBPerS = med(func(f crawlFigures) float64 { return f.MBPerS })
	m.CPUMsPerPage = med(func(f crawlFigures) float64 { return f.CPUMsPerPage })
	m.PeakRSSMB = med(func(f crawlFigures) float64 { return f.PeakRSSMB })
	for _, f := range fs {
		m.Finished = m.Finished && f.Finished
	}
	return m
}

// medianRatios is the median of each ratio over the rounds (at least one).
func medianRatios(rs []crawlRatios) crawlRatios {
	med := func(get func(crawlRatios) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = get(r)
		}
		return median(v)
	}
	return crawlRatios{PagesPerS: med(func(r crawlRatios) float64 { return r.PagesPerS }),
		CPUPerPage: med(func(r crawlRatios) float64 { return r.CPUPerPage }),
		PeakRSS:    med(func(r crawlRatios) float64 { return r.PeakRSS })}
}

// median of v (not empty; v is sorted in place): the middle value, or the
// mean of the two middle ones.
func median(v []float64) float64 {
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
