package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// Event is one dispatched server-sent event. Data lines are joined with "\n".
type Event struct {
	Type string
	Data []byte
}

// Reader reads events from a stream.
type Reader struct {
	r   *bufio.Reader
	err error
}

// NewReader returns a Reader over r.
func NewReader(r io.Reader) *Reader { return &Reader{r: bufio.NewReaderSize(r, 16<<10)} }

// Next returns the next event. It returns io.EOF after the last event of a stream that ended
// cleanly and the read error for one that did not.
func (s *Reader) Next() (Event, error) {
	if s.err != nil {
		return Event{}, s.err
	}
	var (
		ev      Event
		data    bytes.Buffer
		hasData bool
	)
	for {
		line, err := s.r.ReadBytes('\n')
		if len(line) > 0 {
			line = bytes.TrimRight(line, "\r\n")
			if len(line) == 0 {
				if hasData {
					ev.Data = data.Bytes()
					return ev, nil
				}
				ev.Type = ""
			} else {
				s.field(line, &ev, &data, &hasData)
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				s.err = err
				return Event{}, err
			}
			s.err = io.EOF
			if hasData {
				ev.Data = data.Bytes()
				return ev, nil
			}
			return Event{}, io.EOF
		}
	}
}

func (s *Reader) field(line []byte, ev *Event, data *bytes.Buffer, hasData *bool) {
	if line[0] == ':' {
		return // comment
	}
	name, value, _ := bytes.Cut(line, []byte(":"))
	value = bytes.TrimPrefix(value, []byte(" "))
	switch string(name) {
	case "event":
		ev.Type = string(value)
	case "data":
		if *hasData {
			data.WriteByte('\n')
		}
		data.Write(value)
		*hasData = true
	}
}
