package spider

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
)

// MemInfoFile is where Linux says how much memory the machine has.
const MemInfoFile = "/proc/meminfo"

// ReadMemTotal reads the MemTotal line of a file in the format of
// MemInfoFile, in bytes.
func ReadMemTotal(path string) (uint64, error) {
	b, err := readSmall(path)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) == 3 && string(f[0]) == "MemTotal:" && string(f[2]) == "kB" {
			if kb, err := strconv.ParseUint(string(f[1]), 10, 64); err == nil && kb > 0 && kb < 1<<50 {
				return kb << 10, nil
			}
		}
	}
	return 0, fmt.Errorf("%s: no line \"MemTotal: N kB\" in its first %d bytes", path, len(b))
}

// MemoryWarnings says, naming the figures, when fetchers each holding a
// body of maxBody bytes, as they may at once, would need more than the
// machine's memory (memInfoPath's MemTotal), or that the memory could not
// be read. The node would then be killed for want of memory mid-crawl,
// at the first few hosts serving large bodies, rather than refused at its
// start with the figures that cause it.
func MemoryWarnings(fetchers int, maxBody int64, memInfoPath string) []string {
	total, err := ReadMemTotal(memInfoPath)
	if err != nil {
		return []string{fmt.Sprintf("machine memory unknown (fetchers × limits.max_body not checked): %v", err)}
	}
	need := float64(max(fetchers, 0)) * float64(max(maxBody, 0))
	if need <= float64(total) {
		return nil
	}
	return []string{fmt.Sprintf("fetchers × limits.max_body: %d × %s = %s is above this machine's memory (%s): each fetcher may hold a body of limits.max_body at once, "+
		"and a crawl meeting large bodies is killed for want of memory; lower fetchers or limits.max_body",
		fetchers, bytesText(float64(maxBody)), bytesText(need), bytesText(float64(total)))}
}

// bytesText is n bytes in the largest binary unit below it, as 1.5 GiB.
func bytesText(n float64) string {
	units := []string{"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"}
	u := 0
	for n >= 1024 && u < len(units)-1 {
		n /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%.0f bytes", n)
	}
	return fmt.Sprintf("%.3g %s", n, units[u])
}
