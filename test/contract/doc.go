// Package contract holds contract tests that replay answers recorded from
// real forges (testdata/) through the real gateway binary: what a stock
// forge really sends must pass the gateway's strict checks and come out
// unchanged in every documented field.
package contract
