module github.com/kspider/kspider

go 1.26.0

require (
	github.com/beevik/ntp v1.6.0 // indirect
	github.com/edsrzf/mmap-go v1.2.0 // indirect
	github.com/jimsmart/grobotstxt v1.0.3 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/miekg/dns v1.1.73 // indirect
	github.com/rasky/go-lzo v0.0.0-20200203143853-96a758eda86e // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)
