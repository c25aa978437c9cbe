//go:build !unix

package analysis

const openNonBlocking = 0
