//go:build !linux

package collector

import (
	"net"
	"time"
)

func setAckTimeout(raw net.Conn, d time.Duration) {}
