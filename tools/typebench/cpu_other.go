//go:build !unix

package main

import "time"

// processCPU is -1: where this process's CPU time cannot be read.
func processCPU() time.Duration { return -1 }
