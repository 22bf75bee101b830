package testweb

import (
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// Host names look like the Thai web the crawler was built for: universities
// under .ac.th, companies under .co.th, the usual generic suffixes, and some
// names in Thai script, which DNS and the Host header carry as punycode.

var nameWords = []string{
	"siam", "krung", "thai", "chula", "mahidol", "sanook", "kasikorn", "bangkok",
	"chiangmai", "phuket", "isan", "mueang", "wat", "baan", "khao", "pattaya",
	"lanna", "sukhothai", "ayutthaya", "korat", "hatyai", "udon", "khonkaen",
	"mekong", "chao", "praya", "samui", "krabi", "rama", "silom", "sathorn",
	"ladprao", "bangna", "thonburi", "nakhon", "songkhla", "ubon", "lampang",
	"nan", "phrae", "trang", "ranong", "surin", "yala", "loei", "tak", "pai",
	"orchid", "mango", "durian", "lotus", "elephant", "tuktuk", "jasmine",
	"tech", "data", "net", "info", "shop", "news", "travel", "food", "media",
	"edu", "soft", "cloud", "green", "star", "city", "home", "market", "smart",
}

var thaiWords = []string{
	"ข่าว", "ไทย", "ร้านค้า", "โรงเรียน", "ท่องเที่ยว", "อาหาร", "มหาวิทยาลัย",
	"ธนาคาร", "กรุงเทพ", "เชียงใหม่", "ตลาด", "สุขภาพ", "กีฬา", "บันเทิง",
}

var subdomains = []string{"www", "www", "www", "www", "www", "", "", "news", "library", "reg", "portal", "web", "shop", "blog"}

type suffixWeight struct {
	suffix string
	weight int
}

var suffixes = []suffixWeight{
	{"ac.th", 20}, {"co.th", 20}, {"in.th", 4}, {"or.th", 3}, {"go.th", 3}, {"th", 2},
	{"com", 25}, {"org", 10}, {"net", 10},
}

// hostName draws a fresh name; taken holds the names already used.
func hostName(r *rng, idn bool, taken map[string]bool) (ascii, display string) {
	for attempt := 0; ; attempt++ {
		if idn {
			label := pick(r, thaiWords)
			if r.chance(0.5) {
				label += pick(r, thaiWords)
			}
			tld := pick(r, []string{"th", "ไทย", "com", "co.th"})
			display = label + "." + tld
			a, err := idna.Lookup.ToASCII(display)
			if err != nil || taken[a] {
				if attempt > 50 {
					idn = false
				}
				continue
			}
			ascii = a
		} else {
			label := pick(r, nameWords)
			switch r.intn(4) {
			case 0:
				label += pick(r, nameWords)
			case 1:
				label += "-" + pick(r, nameWords)
			}
			if attempt > 3 {
				label += strconv.Itoa(r.intn(1000))
			}
			sub := pick(r, subdomains)
			total := 0
			for _, s := range suffixes {
				total += s.weight
			}
			w := r.intn(total)
			suffix := suffixes[0].suffix
			for _, s := range suffixes {
				if w < s.weight {
					suffix = s.suffix
					break
				}
				w -= s.weight
			}
			ascii = label + "." + suffix
			if sub != "" {
				ascii = sub + "." + ascii
			}
			display = ascii
			if taken[ascii] {
				continue
			}
		}
		taken[ascii] = true
		return ascii, display
	}
}

// spamDomain names a wildcard-DNS spam domain.
func spamDomain(r *rng, n int, taken map[string]bool) string {
	for {
		d := pick(r, []string{"cheap", "best", "free", "win", "lucky", "hot"}) +
			pick(r, []string{"casino", "pills", "loans", "deals", "prizes", "links"}) + strconv.Itoa(n) + "." +
			pick(r, []string{"com", "net", "org"})
		if !taken[d] {
			taken[d] = true
			return d
		}
		n += 100
	}
}

// slugWords name pages and sections.
var slugWords = []string{
	"annual-report", "admission", "faculty", "calendar", "staff", "course",
	"product", "press-release", "gallery", "contact", "history", "service",
	"project", "seminar", "thesis", "notice", "promotion", "review", "menu",
	"article", "download", "policy", "scholarship", "library", "alumni",
}

var sectionWords = []string{
	"news", "about", "research", "courses", "products", "events", "docs/archive",
	"th", "en/info", "departments/cs", "blog/2025", "services", "community",
}

// thaiSection is a section name in Thai script: its links are written
// percent-encoded, as browsers send them.
const thaiSection = "ข่าวสาร"

func escapePathSegment(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || c == '%' || c == '?' || c == '#' || c <= ' ' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x80 && c != '%' && c != '?' && c != '#' && c > ' ' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte("0123456789ABCDEF"[c>>4])
		b.WriteByte("0123456789ABCDEF"[c&15])
	}
	return b.String()
}
