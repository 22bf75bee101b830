package urlnorm

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// uts46 is "domain to ASCII" with beStrict false (§3.5): UTS #46 ToASCII
// with CheckHyphens false, CheckBidi true, CheckJoiners true,
// UseSTD3ASCIIRules false, Transitional_Processing false and
// VerifyDnsLength false. MapForLookup turns STD3 rules on, so the option
// after it turns them off again. An idna.Profile is immutable.
var uts46 = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.CheckJoiners(true),
	idna.CheckHyphens(false),
	idna.StrictDomainName(false),
	idna.Transitional(false),
	idna.VerifyDNSLength(false),
)

const (
	errForbidden  failure = "forbidden code point in host"
	errIDNA       failure = "host is not a valid internationalised domain name"
	errIPv4       failure = "invalid IPv4 address"
	errIPv6       failure = "invalid IPv6 address"
	errEmptyHost  failure = "empty host"
	errPort       failure = "invalid port"
	errHostLong   failure = "host longer than 253 characters"
	errLabelLong  failure = "host label longer than 63 characters"
	errNoBase     failure = "relative URL without a base"
	errOpaqueBase failure = "relative URL against a base with an opaque path"
)

// forbiddenHostSet holds the forbidden host code points (§3.2);
// forbiddenDomainSet adds C0 controls, "%" and DEL for domains. The
// bitmaps are never written after initialisation.
var (
	forbiddenHostSet   = newEncodeSet(encodeSet{}, "\x00\t\n\r #/:<>?@[\\]^|")
	forbiddenDomainSet = newEncodeSet(encodeSet{0xffffffff, 0}, "%\x7f#/:<>?@[\\]^| ")
)

func forbiddenHost(c byte) bool { return c < 0x80 && forbiddenHostSet.hasASCII(c) }

func forbiddenDomain(c byte) bool { return c < 0x80 && forbiddenDomainSet.hasASCII(c) }

// ASCIIHost is the host name s as the normaliser writes it in a URL of
// a special scheme: Unicode labels as A-labels (UTS #46, "xn--"), lower
// case, an IPv4 address in its dotted form. Tools that take a bare host
// name use it to look up what a crawl would.
func ASCIIHost(s string) (string, error) {
	b, err := appendHost(nil, s, true)
	return string(b), err
}

// appendHost appends the serialisation of the host parsed from s (§3.5
// "host parser"), or returns dst unchanged and the failure.
func appendHost(dst []byte, s string, special bool) ([]byte, error) {
	if strings.HasPrefix(s, "[") {
		if !strings.HasSuffix(s, "]") || len(s) < 2 {
			return dst, errIPv6
		}
		a, ok := parseIPv6(s[1 : len(s)-1])
		if !ok {
			return dst, errIPv6
		}
		dst = append(dst, '[')
		dst = appendIPv6(dst, &a)
		return append(dst, ']'), nil
	}
	if !special {
		return appendOpaqueHost(dst, s)
	}
	// The decoded domain is built at the end of dst and replaced by its
	// ASCII form, so ASCII hosts (nearly all) are handled without
	// allocating.
	start := len(dst)
	dst = percentDecode(dst, s)
	ascii := true
	for _, c := range dst[start:] {
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii && !hasPunycodeLabel(dst[start:]) {
		for i := start; i < len(dst); i++ {
			if c := dst[i]; 'A' <= c && c <= 'Z' {
				dst[i] = c + 'a' - 'A'
			}
		}
	} else {
		// The limits of DNS (RFC 1035) and UTS #46 bound the input of the
		// IDNA conversion, whose punycode step is quadratic in a label's
		// length: a link to a host of one 100 KB label would cost seconds.
		if err := checkHostLen(dst[start:]); err != nil {
			return dst[:start], err
		}
		// UTF-8 decode without BOM: invalid sequences become U+FFFD, which
		// UTS #46 disallows, so they fail below.
		decoded := strings.ToValidUTF8(string(dst[start:]), "\uFFFD")
		decoded = strings.TrimPrefix(decoded, "\uFEFF")
		a, err := uts46.ToASCII(decoded)
		if err == nil && hasEmptyPunycodeLabel(decoded) {
			// UTS #46 (since 15.1) rejects "xn--" with nothing after it;
			// the idna package drops the label instead, which would turn
			// "xn--.com" into the different host ".com".
			err = errIDNA
		}
		if err == nil && a != decoded {
			// The punycode of very long labels (hundreds of code points)
			// overflows the idna package's decoder, so such an href would
			// not parse back; refuse it here so every href does.
			_, err = uts46.ToASCII(a)
		}
		if err != nil {
			return dst[:start], errIDNA
		}
		dst = append(dst[:start], a...)
	}
	domain := dst[start:]
	if len(domain) == 0 {
		return dst[:start], errEmptyHost
	}
	if err := checkHostLen(domain); err != nil {
		return dst[:start], err
	}
	for _, c := range domain {
		if forbiddenDomain(c) {
			return dst[:start], errForbidden
		}
	}
	if endsInNumber(domain) {
		v, ok := parseIPv4(domain)
		if !ok {
			return dst[:start], errIPv4
		}
		return appendIPv4(dst[:start], v), nil
	}
	return dst, nil
}

// Host limits (RFC 1035 §2.3.4, UTS #46 VerifyDnsLength): no name a
// resolver can look up is longer.
const (
	maxHostLen  = 253
	maxLabelLen = 63
)

// checkHostLen refuses a domain longer than maxHostLen (one trailing dot
// aside) or with a label longer than maxLabelLen. Before the IDNA
// conversion it counts code points, not bytes: a label of 40 Cyrillic
// letters is 80 bytes of UTF-8 but 50 of punycode, and valid. Every
// non-ASCII code point costs at least one punycode character, so no host
// that converts within the limits is refused (except one padded with more
// code points that UTS #46 maps to nothing than any real name holds).
// Labels end at "." and at the dots UTS #46 maps to ".".
func checkHostLen(d []byte) error {
	n, label := 0, 0
	for i := 0; i < len(d); {
		c := d[i]
		size := 1
		if c >= utf8.RuneSelf {
			var r rune
			r, size = utf8.DecodeRune(d[i:])
			if r == '\u3002' || r == '\uff0e' || r == '\uff61' {
				c = '.'
			}
		}
		i += size
		if c == '.' {
			if i == len(d) {
				break // one trailing dot is the root, not part of the length
			}
			label = 0
		} else if label++; label > maxLabelLen {
			return errLabelLong
		}
		if n++; n > maxHostLen {
			return errHostLong
		}
	}
	return nil
}

// hasPunycodeLabel reports whether a label starts with "xn--" (any case):
// such a label must be decoded and checked, ASCII or not.
func hasPunycodeLabel(d []byte) bool {
	for i := 0; i+4 <= len(d); i++ {
		if (i == 0 || d[i-1] == '.') && (d[i] == 'x' || d[i] == 'X') && (d[i+1] == 'n' || d[i+1] == 'N') && d[i+2] == '-' && d[i+3] == '-' {
			return true
		}
	}
	return false
}

// hasEmptyPunycodeLabel reports whether a label is "xn--" (any case)
// alone. Labels end at "." and at the dots UTS #46 maps to ".".
func hasEmptyPunycodeLabel(d string) bool {
	for d != "" {
		end := len(d)
		next := end
		for i, r := range d {
			if r == '.' || r == '\u3002' || r == '\uff0e' || r == '\uff61' {
				end, next = i, i+utf8.RuneLen(r)
				break
			}
		}
		if strings.EqualFold(d[:end], "xn--") {
			return true
		}
		d = d[next:]
	}
	return false
}

// appendOpaqueHost is the "opaque-host parser" of non-special schemes.
func appendOpaqueHost(dst []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; forbiddenHost(c) {
			return dst, errForbidden
		}
	}
	return appendEncoded(dst, s, &c0ControlSet), nil
}

// endsInNumber is the "ends in a number checker": whether the last label
// (ignoring one trailing dot) is decimal digits or an IPv4 number.
func endsInNumber(d []byte) bool {
	if len(d) > 0 && d[len(d)-1] == '.' {
		d = d[:len(d)-1]
		if len(d) == 0 {
			return false
		}
	}
	last := d
	for i := len(d) - 1; i >= 0; i-- {
		if d[i] == '.' {
			last = d[i+1:]
			break
		}
	}
	if len(last) == 0 {
		return false
	}
	digits := true
	for _, c := range last {
		if c < '0' || c > '9' {
			digits = false
			break
		}
	}
	if digits {
		return true
	}
	_, ok := parseIPv4Number(last)
	return ok
}
