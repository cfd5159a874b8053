package faultinj

import (
	"sort"
	"strconv"
	"strings"
)

// CatalogueMarkdown is the catalogue as docs/faults.md's tables (kinds,
// then outbox_field's fields), generated from Info and Fields so that the
// page and the code cannot drift (a test compares them).
func CatalogueMarkdown() string {
	var b strings.Builder
	b.WriteString("| kind | group | fires at (default first) | arguments | what the PF does | driver path it aims at (Linux 6.1) |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
	for _, k := range Kinds() {
		in := k.Info()
		pts := []string{in.Default.String()}
		for _, p := range []Point{PointPost, PointComm, PointFlags, PointNow, PointCQE} {
			if in.Points&p != 0 && p != in.Default {
				pts = append(pts, p.String())
			}
		}
		at := strings.Join(pts, ", ")
		if in.Event {
			at += " ('e' commands only)"
		}
		if in.Success {
			at += " (successful completions only)"
		}
		args := "—"
		if len(in.Params) > 0 {
			args = "`" + strings.Join(in.Params, "`, `") + "`"
		}
		b.WriteString("| `" + in.Name + "` | " + in.Group.String() + " | " + at + " | " + args + " | " + esc(in.Does) + " | " + esc(in.Driver) + " |\n")
	}
	b.WriteString("\n| outbox field | command | offset | bits | how the driver reads it |\n")
	b.WriteString("| --- | --- | --- | --- | --- |\n")
	for _, f := range fields {
		b.WriteString("| `" + f.Name + "` | " + f.Op.String() + " | " + hex(uint64(f.Off)) + " (" + itoa(f.Width) + " bytes) | " +
			hex(uint64(f.Mask)) + " << " + itoa(int(f.Shift)) + " | " + esc(f.Doc) + " |\n")
	}
	b.WriteString("\n| argument | value |\n| --- | --- |\n")
	names := make([]string, 0, len(ParamInfo))
	for n := range ParamInfo {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b.WriteString("| `" + n + "` | " + esc(ParamInfo[n]) + " |\n")
	}
	return b.String()
}

func esc(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

func hex(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }

func itoa(n int) string { return strconv.Itoa(n) }
