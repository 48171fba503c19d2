// Package promtext writes the Prometheus text exposition format (version
// 0.0.4): a HELP and a TYPE line a series, then its samples. It is the
// few lines of text a scrape reads, so that no program built on Throng
// needs Prometheus' client library for one page.
package promtext

import (
	"bufio"
	"strconv"
	"strings"
)

// ContentType is the Content-Type of a page in this format.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Writer writes series to a page.
type Writer struct{ w *bufio.Writer }

// New returns a Writer onto w; flush w when the page is done.
func New(w *bufio.Writer) Writer { return Writer{w} }

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
)

// Header starts series name: its help text and its kind ("gauge",
// "counter").
func (p Writer) Header(name, help, kind string) {
	p.w.WriteString("# HELP " + name + " " + helpEscaper.Replace(help) + "\n")
	p.w.WriteString("# TYPE " + name + " " + kind + "\n")
}

// Sample writes the value of an unlabelled series.
func (p Writer) Sample(name string, v float64) {
	p.w.WriteString(name + " " + value(v) + "\n")
}

// Labelled writes the value of series name for one value of label.
func (p Writer) Labelled(name, label, labelValue string, v float64) {
	p.w.WriteString(name + "{" + label + `="` + labelEscaper.Replace(labelValue) + `"} ` + value(v) + "\n")
}

// value writes a sample value as the format reads it.
func value(v float64) string {
	switch {
	case v != v:
		return "NaN"
	case v > 1.7976931348623157e308:
		return "+Inf"
	case v < -1.7976931348623157e308:
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
