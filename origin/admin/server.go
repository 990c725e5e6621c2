package admin

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// EndpointFile is written into the data directory while a server runs.
const EndpointFile = "admin.json"

// Endpoint tells the CLI where the running server's admin listener is.
type Endpoint struct {
	Addr  string `json:"addr"`
	Token string `json:"token"`
	PID   int    `json:"pid"`
}

// Server serves the operator commands on a loopback listener.
type Server struct {
	svc     *Service
	dataDir string
	token   string
	ln      net.Listener
	srv     *http.Server
}

// NewServer listens on an ephemeral loopback port and publishes the endpoint
// file in dataDir.
func NewServer(svc *Service, dataDir string) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("admin listener: %w", err)
	}
	b := make([]byte, 32)
	rand.Read(b)
	s := &Server{svc: svc, dataDir: dataDir, token: hex.EncodeToString(b), ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /admin/orgs", s.createOrg)
	mux.HandleFunc("POST /admin/orgs/{id}/suspend", s.setSuspended(true))
	mux.HandleFunc("POST /admin/orgs/{id}/resume", s.setSuspended(false))
	mux.HandleFunc("GET /admin/orgs", s.listOrgs)
	mux.HandleFunc("POST /admin/orgs/{id}/plan", s.setPlan)
	mux.HandleFunc("POST /admin/orgs/{id}/keys", s.createKey)
	mux.HandleFunc("POST /admin/backup", s.backup)
	mux.HandleFunc("POST /admin/reseal", s.reseal)
	s.srv = &http.Server{Handler: s.authenticate(mux), ReadHeaderTimeout: 5 * time.Second}
	ep := Endpoint{Addr: ln.Addr().String(), Token: s.token, PID: os.Getpid()}
	if err := writeEndpoint(dataDir, ep); err != nil {
		ln.Close()
		return nil, err
	}
	return s, nil
}

func writeEndpoint(dataDir string, ep Endpoint) error {
	raw, _ := json.Marshal(ep)
	tmp, err := os.CreateTemp(dataDir, ".admin-*.json")
	if err != nil {
		return fmt.Errorf("admin endpoint file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err = tmp.Chmod(0o600); err == nil {
		_, err = tmp.Write(raw)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dataDir, EndpointFile))
	}
	if err != nil {
		return fmt.Errorf("admin endpoint file: %w", err)
	}
	return nil
}

// Serve answers admin requests until Stop.
func (s *Server) Serve() error {
	if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Stop closes the listener and removes the endpoint file. A command still
// running when ctx ends (a backup being sent) has its connection closed.
func (s *Server) Stop(ctx context.Context) error {
	os.Remove(filepath.Join(s.dataDir, EndpointFile))
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	return err
}

func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			writeError(w, http.StatusForbidden, "admin endpoint is loopback only")
			return
		}
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(token), []byte(s.token)) != 1 {
			writeError(w, http.StatusUnauthorized, "invalid admin token")
			return
		}
		next.ServeHTTP(w, r)
	})
}

type createRequest struct {
	Name string `json:"name"`
	Plan string `json:"plan"`
}

func (s *Server) createOrg(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "malformed request")
		return
	}
	created, err := s.svc.CreateOrg(r.Context(), req.Name, req.Plan)
	if err == nil {
		slog.InfoContext(r.Context(), "admin command", "command", "org.create", "org_id", created.OrgID, "plan", created.Plan,
			"key_id", created.Key.ID, "api_id", created.Key.APIID)
	}
	s.reply(w, r, created, err)
}

func (s *Server) setSuspended(suspended bool) http.HandlerFunc {
	command := "org.resume"
	if suspended {
		command = "org.suspend"
	}
	return func(w http.ResponseWriter, r *http.Request) {
		state, err := s.svc.SetSuspended(r.Context(), r.PathValue("id"), suspended)
		if err == nil {
			slog.InfoContext(r.Context(), "admin command", "command", command, "org_id", state.OrgID)
		}
		s.reply(w, r, state, err)
	}
}

func (s *Server) listOrgs(w http.ResponseWriter, r *http.Request) {
	list, err := s.svc.ListOrgs(r.Context())
	s.reply(w, r, list, err)
}

type planRequest struct {
	Plan string `json:"plan"`
}

func (s *Server) setPlan(w http.ResponseWriter, r *http.Request) {
	var req planRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "malformed request")
		return
	}
	o, err := s.svc.SetPlan(r.Context(), r.PathValue("id"), req.Plan)
	if err == nil {
		slog.InfoContext(r.Context(), "admin command", "command", "org.set_plan", "org_id", o.ID, "plan", o.Plan)
	}
	s.reply(w, r, o, err)
}

type keyRequest struct {
	Name string `json:"name"`
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	var req keyRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "malformed request")
		return
	}
	k, err := s.svc.CreateKey(r.Context(), r.PathValue("id"), req.Name)
	if err == nil {
		// The secret is answered once, never logged.
		slog.InfoContext(r.Context(), "admin command", "command", "key.create", "org_id", k.OrgID, "key_id", k.ID, "api_id", k.APIID)
	}
	s.reply(w, r, k, err)
}

// backup streams the archive. A refusal before the first byte is a JSON
// error; a failure later closes the connection, and the client, whose
// archive then lacks its manifest, fails.
func (s *Server) backup(w http.ResponseWriter, r *http.Request) {
	if s.svc.WriteBackup == nil {
		writeError(w, http.StatusBadRequest, ErrBackupUnsupported.Error()+": this server makes none")
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	sw := &startedWriter{w: w}
	m, err := s.svc.WriteBackup(r.Context(), sw)
	switch {
	case err == nil:
		slog.InfoContext(r.Context(), "admin command", "command", "backup", "files", len(m.Files), "images", m.Images, "bytes", m.Size())
	case !sw.started:
		s.reply(w, r, nil, err)
	default:
		slog.ErrorContext(r.Context(), "admin backup failed", "error", err)
		panic(http.ErrAbortHandler)
	}
}

// startedWriter tells whether anything was written.
type startedWriter struct {
	w       io.Writer
	started bool
}

func (s *startedWriter) Write(p []byte) (int, error) {
	s.started = true
	return s.w.Write(p)
}

func (s *Server) reply(w http.ResponseWriter, r *http.Request, v any, err error) {
	switch {
	case err == nil:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	case IsUserError(err):
		writeError(w, http.StatusBadRequest, err.Error())
	default:
		slog.ErrorContext(r.Context(), "admin command failed", "error", err)
		writeError(w, http.StatusInternalServerError, "internal error")
	}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": http.StatusText(status), "message": msg, "statusCode": status})
}

func (s *Server) reseal(w http.ResponseWriter, r *http.Request) {
	report, err := s.svc.Reseal(r.Context())
	if report != nil {
		t := report.Total()
		slog.InfoContext(r.Context(), "admin command", "command", "reseal", "current_key", report.CurrentKey,
			"records", t.Records, "resealed", t.Resealed, "failed", t.Failed)
	}
	s.reply(w, r, report, err)
}
