package server

import "fmt"

const (
	DefaultPort = 8080
	maxConns    = 100
)

var ErrClosed = fmt.Errorf("closed")

// Server serves.
type Server struct {
	Addr    string
	conns   int
}

type Handler interface {
	Serve(req string) error
}

type ID = string

// Start starts the server.
func (s *Server) Start() error {
	inner := func() {}
	inner()
	return nil
}

func (s Server) Addr2() string { return s.Addr }

func (l *List[T]) Push(v T) {}

func New(addr string) *Server {
	return &Server{Addr: addr}
}
