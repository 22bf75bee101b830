package scope_test

import (
	"fmt"

	"github.com/kspider/kspider/spider/scope"
)

func ExampleFilter() {
	c := scope.Default()
	c.Domains = []string{"th.ac.*", "-th.ac.ku.cs.*"}
	c.RejectCGI = true
	f, err := scope.New(c)
	if err != nil {
		panic(err)
	}
	for _, u := range []string{
		"http://www.ku.ac.th/news/",
		"http://www.cs.ku.ac.th/",
		"http://example.com/",
		"http://www.ku.ac.th/a/loop/loop/loop/",
		"http://www.ku.ac.th/cgi-bin/search",
	} {
		fmt.Println(f.Admit(u), u)
	}
	fmt.Println(f.Counts()[scope.OK], "admitted")
	// Output:
	// ok http://www.ku.ac.th/news/
	// excluded http://www.cs.ku.ac.th/
	// out-of-domain http://example.com/
	// repeated-segment http://www.ku.ac.th/a/loop/loop/loop/
	// cgi http://www.ku.ac.th/cgi-bin/search
	// 1 admitted
}

func ExampleDepth() {
	d := &scope.Depth{Max: 3, Store: scope.NewMemDepth()}
	// Found first along a long chain, beyond the limit...
	fmt.Printf("%+v\n", d.Seen("http://h/x", 5))
	// ...then along a short one: crawlable after all.
	fmt.Printf("%+v\n", d.Seen("http://h/x", 2))
	// Found again at depth 1 after it was admitted: follow its links anew.
	fmt.Printf("%+v\n", d.Seen("http://h/x", 1))
	// Output:
	// {Crawl:false Reexpand:false Depth:5 Reason:too-deep}
	// {Crawl:true Reexpand:false Depth:2 Reason:ok}
	// {Crawl:false Reexpand:true Depth:1 Reason:ok}
}
