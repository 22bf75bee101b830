package main

// maxHostAddrs is how many host addresses the web has: 127.1.0.1 to
// 127.255.255.254, skipping .0 and .255 (testweb's loopbackAddr); past
// that, addresses would repeat.
const maxHostAddrs = 255 * 256 * 254

// filesPerHost is the descriptors a host can take: the server listens on
// every host address twice, HTTP and HTTPS (fewer when hosts share an
// address, which a bound asked before generating cannot count on).
const filesPerHost = 2

// filesReserve is the descriptors left besides the host listeners: the
// front and ::1 listeners, DNS over UDP and TCP, the log, and above all the
// crawler's connections, which the server accepts one descriptor each.
const filesReserve = 512

// checkHosts refuses more hosts than can be served: --hosts 100000 under
// a limit of 20,000 open files failed on "too many open files" after
// generating the web for 10 s. openFiles is RLIMIT_NOFILE as this process
// has it (0: unlimited).
func checkHosts(hosts int, openFiles uint64) error {
	if hosts > maxHostAddrs {
		return usagef("--hosts %d: at most %d, the host addresses in 127.1.0.1-127.255.255.254", hosts, maxHostAddrs)
	}
	if openFiles == 0 {
		return nil
	}
	most := 0
	if openFiles > filesReserve {
		most = int(min((openFiles-filesReserve)/filesPerHost, maxHostAddrs))
	}
	if hosts > most {
		return usagef("--hosts %d: at most %d under this process's open-files limit (RLIMIT_NOFILE %d): "+
			"the server listens on each host's address for HTTP and HTTPS (%d files a host) and keeps %d for connections; "+
			"raise the limit (ulimit -n) or ask fewer hosts", hosts, most, openFiles, filesPerHost, filesReserve)
	}
	return nil
}
