// Package scheduler will hold the node's scheduler: which hosts it crawls in
// which phase (thesis §4). The host phases come with a later issue; for now
// the package holds what they run on, the phase clock.
//
// The phase clock is the system clock corrected by the offset measured
// against several NTP servers (github.com/beevik/ntp): each round asks every
// server once, drops answers that fail Validate, come from too high a
// stratum or took too long, and takes the median offset of the rest. Rounds
// repeat every NTPConfig.Interval (Clock.Run).
//
// Time is cut into slots of Cluster.PhaseLength from Cluster.Epoch, both the
// same on every node: slot t = floor((now − epoch) / phase_length). Node i of
// N, with P ≥ N phases, is in phase (i + t) mod P during slot t, so the nodes
// swap host sets at every slot boundary at the same moment.
//
// Two nodes disagree about that moment by at most their clocks' errors, so
// the clock brackets every boundary with a guard interval (default twice
// the offset bound) in which no new fetch starts, and it reports itself
// unsafe when it cannot vouch for its error: the measured offset exceeds the
// bound (default 100 ms), no NTP server has answered well for longer than
// ClockConfig.MaxSilence, or none ever has. An unsafe clock starts no new
// fetches at all (Phase.MayStart), since it does not know where the
// boundaries are.
package scheduler
