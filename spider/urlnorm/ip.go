package urlnorm

import "strconv"

// parseIPv4Number is the "IPv4 number parser": decimal, octal with a
// leading 0, hex with 0x; the empty string after a prefix is 0. Values are
// saturated above 2^32 so that overflow cannot wrap into a valid address.
func parseIPv4Number(s []byte) (uint64, bool) {
	if len(s) == 0 {
		return 0, false
	}
	radix := uint64(10)
	if len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		s, radix = s[2:], 16
	} else if len(s) >= 2 && s[0] == '0' {
		s, radix = s[1:], 8
	}
	var v uint64
	for _, c := range s {
		d, ok := unhex(c)
		if !ok || uint64(d) >= radix {
			return 0, false
		}
		if v <= 1<<33 {
			v = v*radix + uint64(d)
		}
	}
	return v, true
}

// parseIPv4 is the "IPv4 parser" for a host that ends in a number.
func parseIPv4(d []byte) (uint32, bool) {
	var nums [4]uint64
	n := 0
	if len(d) > 0 && d[len(d)-1] == '.' {
		d = d[:len(d)-1]
	}
	for len(d) >= 0 {
		part := d
		rest := []byte(nil)
		more := false
		for i, c := range d {
			if c == '.' {
				part, rest, more = d[:i], d[i+1:], true
				break
			}
		}
		if n == 4 {
			return 0, false
		}
		v, ok := parseIPv4Number(part)
		if !ok {
			return 0, false
		}
		nums[n] = v
		n++
		if !more {
			break
		}
		d = rest
	}
	for i := 0; i < n-1; i++ {
		if nums[i] > 255 {
			return 0, false
		}
	}
	if nums[n-1] >= 1<<(8*(5-n)) {
		return 0, false
	}
	v := nums[n-1]
	for i := 0; i < n-1; i++ {
		v += nums[i] << (8 * (3 - i))
	}
	return uint32(v), true
}

func appendIPv4(dst []byte, v uint32) []byte {
	for i := 3; i >= 0; i-- {
		dst = strconv.AppendUint(dst, uint64(v>>(8*i)&0xff), 10)
		if i > 0 {
			dst = append(dst, '.')
		}
	}
	return dst
}

// parseIPv6 is the "IPv6 parser" for the text between the brackets.
func parseIPv6(s string) ([8]uint16, bool) {
	var a [8]uint16
	piece, compress, p := 0, -1, 0
	if p < len(s) && s[p] == ':' {
		if len(s) < 2 || s[1] != ':' {
			return a, false
		}
		p += 2
		piece++
		compress = piece
	}
	for p < len(s) {
		if piece == 8 {
			return a, false
		}
		if s[p] == ':' {
			if compress != -1 {
				return a, false
			}
			p++
			piece++
			compress = piece
			continue
		}
		value, length := 0, 0
		for length < 4 && p < len(s) {
			d, ok := unhex(s[p])
			if !ok {
				break
			}
			value = value*16 + int(d)
			p++
			length++
		}
		if p < len(s) && s[p] == '.' {
			if length == 0 {
				return a, false
			}
			p -= length
			if piece > 6 {
				return a, false
			}
			seen := 0
			for p < len(s) {
				v := -1
				if seen > 0 {
					if s[p] == '.' && seen < 4 {
						p++
					} else {
						return a, false
					}
				}
				if p >= len(s) || s[p] < '0' || s[p] > '9' {
					return a, false
				}
				for p < len(s) && s[p] >= '0' && s[p] <= '9' {
					d := int(s[p] - '0')
					switch v {
					case -1:
						v = d
					case 0:
						return a, false
					default:
						v = v*10 + d
					}
					if v > 255 {
						return a, false
					}
					p++
				}
				a[piece] = a[piece]<<8 | uint16(v)
				seen++
				if seen == 2 || seen == 4 {
					piece++
				}
			}
			if seen != 4 {
				return a, false
			}
			break
		} else if p < len(s) && s[p] == ':' {
			p++
			if p >= len(s) {
				return a, false
			}
		} else if p < len(s) {
			return a, false
		}
		a[piece] = uint16(value)
		piece++
	}
	if compress != -1 {
		swaps := piece - compress
		piece = 7
		for piece != 0 && swaps > 0 {
			a[piece], a[compress+swaps-1] = a[compress+swaps-1], a[piece]
			piece--
			swaps--
		}
	} else if piece != 8 {
		return a, false
	}
	return a, true
}

// appendIPv6 is the "IPv6 serializer": lower-case hex, the first longest
// run of two or more zero pieces written "::".
func appendIPv6(dst []byte, a *[8]uint16) []byte {
	best, bestLen := -1, 1
	for i := 0; i < 8; {
		if a[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && a[j] == 0 {
			j++
		}
		if j-i > bestLen {
			best, bestLen = i, j-i
		}
		i = j
	}
	ignore0 := false
	for i := 0; i < 8; i++ {
		if ignore0 && a[i] == 0 {
			continue
		}
		ignore0 = false
		if i == best {
			if i == 0 {
				dst = append(dst, "::"...)
			} else {
				dst = append(dst, ':')
			}
			ignore0 = true
			continue
		}
		dst = strconv.AppendUint(dst, uint64(a[i]), 16)
		if i != 7 {
			dst = append(dst, ':')
		}
	}
	return dst
}
