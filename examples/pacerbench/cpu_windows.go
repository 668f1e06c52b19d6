package main

import (
	"time"

	"golang.org/x/sys/windows"
)

// cpuTime returns the process's user+kernel CPU time from GetProcessTimes.
func cpuTime() time.Duration {
	var creation, exit, kernel, user windows.Filetime
	if windows.GetProcessTimes(windows.CurrentProcess(), &creation, &exit, &kernel, &user) != nil {
		return 0
	}
	ft := func(f windows.Filetime) time.Duration { // 100 ns units
		return time.Duration(int64(f.HighDateTime)<<32|int64(f.LowDateTime)) * 100
	}
	return ft(kernel) + ft(user)
}
