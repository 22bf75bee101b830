package urlnorm_test

import (
	"fmt"

	"github.com/kspider/kspider/spider/urlnorm"
)

func ExampleParseRef() {
	base, _ := urlnorm.Parse("https://example.com/docs/index.html")
	u, _ := urlnorm.ParseRef(base, `..\img/./logo.png?v=1 2#top`)
	fmt.Println(u.Href())
	fmt.Println(u.Hostname(), u.Pathname(), u.Search(), u.Hash())
	// Output:
	// https://example.com/img/logo.png?v=1%202#top
	// example.com /img/logo.png ?v=1%202 #top
}

func ExampleAppendCanonical() {
	base, _ := urlnorm.Parse("http://example.com/a/b.html")
	var buf []byte
	for _, ref := range []string{"HTTP://User@Example.COM:80/%7euser/", "c.html#frag", "mailto:x@example.com"} {
		var err error
		buf, err = urlnorm.AppendCanonical(buf[:0], base, ref, nil)
		if err != nil {
			fmt.Println("error:", err.(*urlnorm.Error).Reason)
			continue
		}
		fmt.Println(string(buf))
	}
	// Output:
	// http://example.com/~user/
	// http://example.com/a/c.html
	// error: scheme
}
