package testweb

// filler holds text that pages are padded with: pre-generated once per web
// (about 256 KiB), so a page costs a few copies, not a random draw per byte.
type filler struct {
	utf8 []byte // Thai and English words, UTF-8
	tis  []byte // the same text in TIS-620, for the non-UTF-8 hosts
}

var fillerEnglish = []string{
	"the", "university", "students", "research", "faculty", "announcement",
	"Bangkok", "province", "service", "online", "registration", "semester",
	"products", "price", "contact", "office", "department", "information",
	"news", "project", "community", "development", "annual", "report", "of",
	"and", "for", "in", "with", "Thailand", "program", "2025", "2026",
}

var fillerThai = []string{
	"มหาวิทยาลัย", "นักศึกษา", "ประกาศ", "ข่าวสาร", "การวิจัย", "คณะ", "ภาควิชา",
	"กรุงเทพมหานคร", "จังหวัด", "บริการ", "ออนไลน์", "ลงทะเบียน", "ภาคเรียน",
	"สินค้า", "ราคา", "ติดต่อ", "สำนักงาน", "ข้อมูล", "โครงการ", "ชุมชน",
	"การพัฒนา", "รายงาน", "ประจำปี", "และ", "ของ", "ใน", "ที่", "ประเทศไทย",
}

const fillerSize = 256 << 10

func newFiller(k uint64) *filler {
	r := newRng(k)
	f := &filler{utf8: make([]byte, 0, fillerSize+64)}
	col := 0
	for len(f.utf8) < fillerSize {
		var w string
		if r.chance(0.55) {
			w = pick(&r, fillerThai)
		} else {
			w = pick(&r, fillerEnglish)
		}
		f.utf8 = append(f.utf8, w...)
		col += len(w)
		switch {
		case col > 200:
			f.utf8 = append(f.utf8, '\n')
			col = 0
		case r.chance(0.08):
			f.utf8 = append(f.utf8, ". "...)
		default:
			f.utf8 = append(f.utf8, ' ')
		}
	}
	f.tis = toTIS620(f.utf8)
	return f
}

// toTIS620 converts UTF-8 Thai and ASCII text to TIS-620 (Thai letters
// U+0E01..U+0E5B become single bytes 0xA1..0xFB); other runes become '?'.
func toTIS620(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for _, r := range string(b) {
		switch {
		case r < 0x80:
			out = append(out, byte(r))
		case r >= 0x0E01 && r <= 0x0E5B:
			out = append(out, byte(r-0x0E00+0xA0))
		default:
			out = append(out, '?')
		}
	}
	return out
}

// appendText appends exactly m bytes of text (no markup) from the corpus,
// starting after a word boundary and ending on a character boundary, padded
// with spaces.
func appendText(dst []byte, corpus []byte, m int, r *rng) []byte {
	if m <= 0 {
		return dst
	}
	n := m
	if n > len(corpus)/2 {
		n = len(corpus) / 2
	}
	off := r.intn(len(corpus) - n - 64)
	for k := 0; k < 40 && corpus[off] != ' '; k++ {
		off++
	}
	off++
	end := off + n
	for end > off && corpus[end]&0xC0 == 0x80 {
		end--
	}
	dst = append(dst, corpus[off:end]...)
	for k := end - off; k < m; k++ {
		dst = append(dst, ' ')
	}
	return dst
}

// appendParagraphs appends exactly m bytes of <p> paragraphs (text only when
// m is too small to hold the tags).
func appendParagraphs(dst []byte, corpus []byte, m int, r *rng) []byte {
	const open, closing = "<p>", "</p>\n"
	for m > 0 {
		if m < 16 {
			return appendText(dst, corpus, m, r)
		}
		chunk := 600 + r.intn(3000)
		if chunk > m-len(open)-len(closing) || m-chunk-len(open)-len(closing) < 16 {
			chunk = m - len(open) - len(closing)
		}
		dst = append(dst, open...)
		dst = appendText(dst, corpus, chunk, r)
		dst = append(dst, closing...)
		m -= chunk + len(open) + len(closing)
	}
	return dst
}
