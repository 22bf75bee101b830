module github.com/kspider/kspider

go 1.26.0

require (
	github.com/beevik/ntp v1.6.0
	github.com/jimsmart/grobotstxt v1.0.3
	github.com/klauspost/compress v1.20.3
	github.com/miekg/dns v1.1.73
	github.com/pelletier/go-toml/v2 v2.4.3
	github.com/rasky/go-lzo v0.0.0-20200203143853-96a758eda86e
	golang.org/x/net v0.62.0
	golang.org/x/sys v0.49.0
)

require golang.org/x/text v0.43.0 // indirect
