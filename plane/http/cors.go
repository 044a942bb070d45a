package httpplane

import (
	"net/http"
	"strings"

	"iggynode/config"
)

// cors is the CORS layer of http.md 8: every OPTIONS request is answered
// here with 200 and an empty body (8.2, 10 #25); other responses get the
// allow-origin and expose-headers headers. Vary: Origin is sent when a
// specific origin is echoed, nothing for * (the recommendation of 11.1).
type cors struct {
	anyOrigin      bool
	origins        map[string]bool
	methods        string
	headers        string
	exposed        string
	credentials    bool
	privateNetwork bool
}

func newCORS(c config.HTTPCORS) *cors {
	out := &cors{origins: map[string]bool{}, credentials: c.AllowCredentials, privateNetwork: c.AllowPrivateNetwork}
	origins := config.TrimList(c.AllowedOrigins)
	if len(origins) > 0 && origins[0] == "*" {
		out.anyOrigin = true
	}
	for _, o := range origins {
		out.origins[o] = true
	}
	var methods []string
	for _, m := range config.TrimList(c.AllowedMethods) {
		methods = append(methods, strings.ToUpper(m))
	}
	out.methods = strings.Join(methods, ",")
	out.headers = strings.ToLower(strings.Join(config.TrimList(c.AllowedHeaders), ","))
	out.exposed = strings.ToLower(strings.Join(config.TrimList(c.ExposedHeaders), ","))
	return out
}

// origin sets access-control-allow-origin for r, if allowed.
func (c *cors) origin(h http.Header, r *http.Request) {
	switch o := r.Header.Get("Origin"); {
	case c.anyOrigin:
		h.Set("Access-Control-Allow-Origin", "*")
	case o != "" && c.origins[o]:
		h.Set("Access-Control-Allow-Origin", o)
		h.Add("Vary", "Origin")
	}
	if c.credentials {
		h.Set("Access-Control-Allow-Credentials", "true")
	}
}

func (c *cors) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		c.origin(h, r)
		if r.Method == http.MethodOptions {
			if c.methods != "" {
				h.Set("Access-Control-Allow-Methods", c.methods)
			}
			if c.headers != "" {
				h.Set("Access-Control-Allow-Headers", c.headers)
			}
			if c.privateNetwork && r.Header.Get("Access-Control-Request-Private-Network") == "true" {
				h.Set("Access-Control-Allow-Private-Network", "true")
			}
			w.WriteHeader(http.StatusOK)
			return
		}
		if c.exposed != "" {
			h.Set("Access-Control-Expose-Headers", c.exposed)
		}
		next.ServeHTTP(w, r)
	})
}
