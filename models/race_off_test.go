//go:build !race

package models

// raceDetector: see race_on_test.go.
const raceDetector = false
