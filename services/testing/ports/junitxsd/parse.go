package junitxsd

import (
	"encoding/xml"
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// Document is a JUnit document as the testing service writes it.
type Document struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr"`
	Tests    string   `xml:"tests,attr"`
	Failures string   `xml:"failures,attr"`
	Errors   string   `xml:"errors,attr"`
	Time     string   `xml:"time,attr"`
	Suites   []Suite  `xml:"testsuite"`
}

// Suite is a <testsuite>.
type Suite struct {
	Name       string     `xml:"name,attr"`
	ID         string     `xml:"id,attr"`
	Tests      string     `xml:"tests,attr"`
	Failures   string     `xml:"failures,attr"`
	Errors     string     `xml:"errors,attr"`
	Skipped    string     `xml:"skipped,attr"`
	Time       string     `xml:"time,attr"`
	Timestamp  string     `xml:"timestamp,attr"`
	Hostname   string     `xml:"hostname,attr"`
	Properties []Property `xml:"properties>property"`
	Cases      []Case     `xml:"testcase"`
}

// Property is a <property>.
type Property struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// Case is a <testcase>.
type Case struct {
	Name      string   `xml:"name,attr"`
	Classname string   `xml:"classname,attr"`
	Time      string   `xml:"time,attr"`
	Failure   *Outcome `xml:"failure"`
	Error     *Outcome `xml:"error"`
	Skipped   *Outcome `xml:"skipped"`
}

// Outcome is a <failure>, <error> or <skipped>.
type Outcome struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// Property is the value of the suite's property name.
func (s Suite) Property(name string) (string, bool) {
	for _, p := range s.Properties {
		if p.Name == name {
			return p.Value, true
		}
	}
	return "", false
}

var seconds = regexp.MustCompile(`^[0-9]+\.[0-9]{3}$`)

// Parse decodes a document and checks what the schema leaves as strings:
// one suite; counts are non-negative integers equal to the cases of each
// outcome (at most one outcome per case); every time is decimal seconds
// with 3 decimals and the suite's is the sum of its cases'; the timestamp
// is ISO 8601 (RFC 3339); the properties agent_id, branch_id,
// invocation_id, status and repeat_count are present.
func Parse(doc []byte) (*Document, error) {
	var d Document
	if err := xml.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	if len(d.Suites) != 1 {
		return nil, fmt.Errorf("%d test suites, want 1", len(d.Suites))
	}
	s := d.Suites[0]
	count := func(what, v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s=%q is not a count", what, v)
		}
		return n, nil
	}
	millis := func(what, v string) (int64, error) {
		if !seconds.MatchString(v) {
			return 0, fmt.Errorf("%s=%q is not seconds with 3 decimals", what, v)
		}
		whole, _ := strconv.ParseInt(v[:len(v)-4], 10, 64)
		frac, _ := strconv.ParseInt(v[len(v)-3:], 10, 64)
		return whole*1000 + frac, nil
	}
	var failures, errs, skipped int
	var sum int64
	for _, c := range s.Cases {
		if c.Name == "" || c.Classname == "" {
			return nil, fmt.Errorf("a test case without name or classname: %+v", c)
		}
		ms, err := millis("testcase time", c.Time)
		if err != nil {
			return nil, err
		}
		sum += ms
		n := 0
		for _, o := range []*Outcome{c.Failure, c.Error, c.Skipped} {
			if o != nil {
				n++
			}
		}
		if n > 1 {
			return nil, fmt.Errorf("test case %q has %d outcomes", c.Name, n)
		}
		switch {
		case c.Failure != nil:
			failures++
		case c.Error != nil:
			errs++
		case c.Skipped != nil:
			skipped++
		}
	}
	want := []struct {
		what string
		v    string
		n    int
	}{
		{"testsuites tests", d.Tests, len(s.Cases)}, {"testsuites failures", d.Failures, failures}, {"testsuites errors", d.Errors, errs},
		{"testsuite tests", s.Tests, len(s.Cases)}, {"testsuite failures", s.Failures, failures}, {"testsuite errors", s.Errors, errs},
		{"testsuite skipped", s.Skipped, skipped},
	}
	for _, w := range want {
		n, err := count(w.what, w.v)
		if err != nil {
			return nil, err
		}
		if n != w.n {
			return nil, fmt.Errorf("%s=%d, but the cases say %d", w.what, n, w.n)
		}
	}
	for _, t := range []string{d.Time, s.Time} {
		ms, err := millis("suite time", t)
		if err != nil {
			return nil, err
		}
		if ms != sum {
			return nil, fmt.Errorf("suite time %s is not the sum of its cases' (%d ms)", t, sum)
		}
	}
	if _, err := time.Parse(time.RFC3339, s.Timestamp); err != nil {
		return nil, fmt.Errorf("timestamp %q: %w", s.Timestamp, err)
	}
	for _, p := range []string{"agent_id", "branch_id", "invocation_id", "status", "repeat_count"} {
		if _, ok := s.Property(p); !ok {
			return nil, fmt.Errorf("property %s is missing", p)
		}
	}
	if s.ID == "" || s.Name == "" || s.Hostname == "" {
		return nil, fmt.Errorf("suite name, id or hostname missing")
	}
	return &d, nil
}
