//go:build !linux

package resolver

import "unsafe"

func hugePageHint(p unsafe.Pointer, size uintptr) {}
