package testweb

import (
	"strconv"
	"strings"
)

// render appends the HTML of p, exactly p.size bytes (unless its markup alone
// is larger), to dst. scratch is reused between calls.
func (w *Web) render(dst []byte, p *page, pt Ports, scratch *[]byte) []byte {
	r := newRng(key(p.key, 40))
	tis := p.host.Behaviour == BehaviourNonUTF8
	corpus := w.filler.utf8
	if tis {
		corpus = w.filler.tis
	}
	b := (*scratch)[:0]
	var gaps []int
	var gapStore [16]int
	gaps = gapStore[:0]
	gap := func() {
		if len(gaps) < cap(gapStore) {
			gaps = append(gaps, len(b))
		}
	}

	switch r.intn(4) {
	case 0:
		b = append(b, "<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 4.01 Transitional//EN\" \"http://www.w3.org/TR/html4/loose.dtd\">\n"...)
	case 1:
	default:
		b = append(b, "<!DOCTYPE html>\n"...)
	}
	if r.chance(0.3) {
		b = append(b, "<HTML>\n<HEAD>\n"...)
	} else {
		b = append(b, "<html lang=\"th\">\n<head>\n"...)
	}
	switch {
	case tis && r.chance(0.5):
		b = append(b, "<meta http-equiv=\"Content-Type\" content=\"text/html; charset=tis-620\">\n"...)
	case tis && r.chance(0.5):
		b = append(b, "<meta charset=windows-874>\n"...)
	case tis:
		// Undeclared: the crawler has to guess.
	case r.chance(0.5):
		b = append(b, "<meta charset=\"utf-8\">\n"...)
	default:
		b = append(b, "<meta http-equiv=Content-Type content=\"text/html; charset=UTF-8\">\n"...)
	}
	b = append(b, "<title>"...)
	b = append(b, strings.ReplaceAll(slugWords[r.intn(len(slugWords))], "-", " ")...)
	b = append(b, " - "...)
	if tis {
		b = append(b, p.host.Name...)
	} else {
		b = append(b, p.host.Display...)
	}
	b = append(b, "</title>\n"...)

	base := dir(p.path)
	var hb []byte
	hrefOf := func(l link) []byte {
		hb = appendHref(hb[:0], p, base, l, pt, &r)
		return hb
	}
	if p.path != "/" && len(p.host.sections) > 1 && r.chance(0.1) && !p.host.Wildcard {
		nb := "/" + p.host.sections[r.intn(len(p.host.sections))] + "/"
		if nb == base {
			nb = "/"
		}
		base = nb
		b = append(b, "<base"...)
		b = attr(b, "href", origin(p.host, p.name, pt)+escapePathSegment(base), &r)
		b = append(b, ">\n"...)
	}
	for _, l := range p.links {
		switch l.kind {
		case linkStylesheet:
			b = append(b, "<link rel=stylesheet type=\"text/css\""...)
			b = appendAttr(b, "href", hrefOf(l), &r)
			b = append(b, ">\n"...)
		case linkScript:
			b = append(b, "<script type=\"text/javascript\""...)
			b = appendAttr(b, "src", hrefOf(l), &r)
			b = append(b, "></script>\n"...)
		}
	}
	b = append(b, "<script>\nvar tpl = '<a href=\"/js-only-"...)
	b = strconv.AppendInt(b, int64(r.intn(1000)), 10)
	b = append(b, ".html\">more</a>';\nif (a < b && b > c) { document.write(tpl); }\n// </div> inside a script is text\n</script>\n"...)
	b = append(b, "</head>\n<body bgcolor=#ffffff leftmargin=0 topmargin=0>\n"...)

	// Navigation: nested layout tables holding the first links.
	anchors := 0
	for _, l := range p.links {
		if l.kind == linkAnchor {
			anchors++
		}
	}
	nav := anchors / 3
	b = append(b, "<table width=100% border=0 cellpadding=0><tr><td valign=top>\n<table class=\"nav\"><tr>\n"...)
	k := 0
	writeAnchor := func(l link) {
		if r.chance(0.15) {
			b = append(b, "<A"...)
			b = appendAttr(b, "HREF", hrefOf(l), &r)
		} else {
			b = append(b, "<a"...)
			b = appendAttr(b, "href", hrefOf(l), &r)
		}
		if r.chance(0.3) {
			b = attr(b, "class", "link", &r)
		}
		if r.chance(0.1) {
			b = append(b, " target=_blank"...)
		}
		b = append(b, '>')
		b = append(b, slugWords[r.intn(len(slugWords))]...)
		b = append(b, "</a>"...)
	}
	for _, l := range p.links {
		if l.kind != linkAnchor || k >= nav {
			continue
		}
		b = append(b, "<td>"...)
		writeAnchor(l)
		if r.chance(0.5) {
			b = append(b, "</td>"...) // sometimes left open, as in the wild
		}
		b = append(b, '\n')
		k++
	}
	b = append(b, "</tr></table>\n</td><td>\n"...)
	b = append(b, "<!-- old menu: <a href=\"/old/index.html\">home</a> <a href=\"http://intranet.invalid/\">intranet</a> -->\n"...)
	b = append(b, "<div id=content>\n"...)
	gap()
	seen := 0
	for _, l := range p.links {
		switch l.kind {
		case linkAnchor:
			seen++
			if seen <= nav {
				continue
			}
			if r.chance(0.4) {
				b = append(b, "<p>"...)
				writeAnchor(l)
				b = append(b, "</p>\n"...)
				gap()
			} else {
				b = append(b, "<li>"...)
				writeAnchor(l)
				b = append(b, '\n')
			}
		case linkImage:
			b = append(b, "<img"...)
			b = appendAttr(b, "src", hrefOf(l), &r)
			b = append(b, " width=120 height=80 alt=\"photo\">\n"...)
		}
	}
	gap()
	switch r.intn(4) {
	case 0:
		b = append(b, "<form action=\"/search\" method=get><input type=text name=q><input type=submit value=\"Search\"></form>\n"...)
	case 1:
		b = append(b, "<p>Unclosed <b>bold <i>italic</b> text</i><br/><font color=red><center>notice</font></center>\n"...)
	case 2:
		b = append(b, "<table><tr><td>cell<td>cell two<tr><td colspan=2>row</table></span></span>\n"...)
	case 3:
		b = append(b, "<p>mail <a href=\"mailto:info@example.th\">us</a> or <a href=\"javascript:void(0)\">open</a> <a name=bottom></a>\n"...)
	}
	gap()
	b = append(b, "</div>\n</td></tr></table>\n<div class=footer>&copy; 2026 "...)
	b = append(b, p.host.Name...)
	b = append(b, "</div>\n</body>\n"...)
	if r.chance(0.8) {
		b = append(b, "</html>\n"...)
	}
	*scratch = b

	fill := p.size - len(b)
	if fill < 0 {
		fill = 0
	}
	prev := 0
	for gi, g := range gaps {
		dst = append(dst, b[prev:g]...)
		share := fill / (len(gaps) - gi)
		dst = appendParagraphs(dst, corpus, share, &r)
		fill -= share
		prev = g
	}
	return append(dst, b[prev:]...)
}
