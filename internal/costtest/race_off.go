//go:build !race

package costtest

const raceBuild = false
