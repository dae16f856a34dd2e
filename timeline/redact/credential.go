package redact

import (
	"math"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A credential rule says why a ConfigMap value or an env literal is hashed
// like a Secret's rather than stored in clear. Rules read the key (the
// ConfigMap key or the variable's name) and the value; the first that
// matches names the reason. The set is seeded by Falco's rule "Create/Modify
// Configmap With Private Credentials" (AWS access key ids, passwords and
// passphrases in a ConfigMap) and listed in SECURITY.md; TestCredential
// holds a positive and a negative case for each.
//
// Key rules look at the words of the name (split at _ - . / space and at a
// lower-to-upper case change), so TOKENIZER_PATH is not a token and
// aws_access_key_id is an access key:
//
//	key-password     a word containing password, passwd or passphrase, or the word pwd
//	key-secret       a word containing secret (client_secret, SECRET_KEY, secretAccessKey)
//	key-token        the word token (or a word ending in token: authtoken), unless the word
//	                 before it is max, num, eos, bos, pad, unk, sep, cls or mask (ML settings)
//	key-api-key      apikey, or the words api and key
//	key-access-key   accesskey, or the words access and key
//	key-private-key  privatekey, or the words private and key
//	key-credential   a word starting with credential or creds
//	key-auth         the word auth, or a word starting with auth and ending in token or key
//
// A key rule does not apply when the name's last word says the value only
// names or locates the credential: name, file, path, dir, ref, mode,
// enabled, ttl, length (SECRET_NAME, PASSWORD_FILE, TOKEN_TTL).
//
// Value rules look at the value whatever its key:
//
//	aws-access-key-id    AKIA, ASIA, AGPA, AIDA, AROA or ANPA and 16 upper-case letters or digits
//	private-key-block    -----BEGIN ... PRIVATE KEY----- (RSA, EC, OPENSSH, PGP, PKCS#8, encrypted)
//	jwt                  three base64url parts, the first two JSON objects (eyJ...)
//	credential-pair      an assignment inside the value (name = v, name: v, "name": v) whose
//	                     name a key rule matches: aws_access_key_id = ..., password=...
//	url-userinfo         a URL with a password: scheme://user:password@host
//	high-entropy-base64  one token of 32+ base64 characters with upper case, lower case and
//	                     digits and at least 4.5 bits of entropy per character
//	high-entropy-hex     one token of 32+ hex digits with at least 3 bits of entropy per
//	                     digit, unless the key names a digest (sha, digest, hash,
//	                     commit, checksum, revision, rev, md5)
//	binary               binaryData whose bytes are not text: it cannot be read for the rules
const (
	RuleKeyPassword       = "key-password"
	RuleKeySecret         = "key-secret"
	RuleKeyToken          = "key-token"
	RuleKeyAPIKey         = "key-api-key"
	RuleKeyAccessKey      = "key-access-key"
	RuleKeyPrivateKey     = "key-private-key"
	RuleKeyCredential     = "key-credential"
	RuleKeyAuth           = "key-auth"
	RuleAWSAccessKeyID    = "aws-access-key-id"
	RulePrivateKeyBlock   = "private-key-block"
	RuleJWT               = "jwt"
	RuleCredentialPair    = "credential-pair"
	RuleURLUserinfo       = "url-userinfo"
	RuleHighEntropyBase64 = "high-entropy-base64"
	RuleHighEntropyHex    = "high-entropy-hex"
	RuleBinary            = "binary"
)

// Credential returns the name of the first rule by which the value of key
// looks like a credential, or "" if none does.
func Credential(key, value string) string {
	if value == "" {
		return ""
	}
	if r := keyRule(key); r != "" {
		return r
	}
	return valueRule(key, value)
}

var (
	awsKeyID   = regexp.MustCompile(`\b(AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b`)
	privateKey = regexp.MustCompile(`-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----`)
	jwt        = regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`)
	userinfo   = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@`)
	// assignment finds "name =", "name:" and "\"name\":" inside a value.
	assignment = regexp.MustCompile(`([A-Za-z][A-Za-z0-9_.\-]*)["']?\s*[:=]`)
	b64Token   = regexp.MustCompile(`^[A-Za-z0-9+/_-]{32,}={0,2}$`)
	hexToken   = regexp.MustCompile(`^(0x)?[0-9a-fA-F]{32,}$`)
)

func valueRule(key, value string) string {
	switch {
	case awsKeyID.MatchString(value):
		return RuleAWSAccessKeyID
	case privateKey.MatchString(value):
		return RulePrivateKeyBlock
	case jwt.MatchString(value):
		return RuleJWT
	case userinfo.MatchString(value):
		return RuleURLUserinfo
	}
	for _, m := range assignment.FindAllStringSubmatch(value, -1) {
		if keyRule(m[1]) != "" {
			return RuleCredentialPair
		}
	}
	tok := strings.TrimSpace(value)
	switch {
	case hexToken.MatchString(tok):
		if !namesDigest(key) && entropy(tok) >= 3 {
			return RuleHighEntropyHex
		}
	case b64Token.MatchString(tok) && mixedCase(tok) && entropy(tok) >= 4.5:
		return RuleHighEntropyBase64
	}
	return ""
}

// keyRule is the key rule a name matches, or "".
func keyRule(name string) string {
	w := words(name)
	if len(w) == 0 {
		return ""
	}
	switch w[len(w)-1] {
	case "name", "file", "path", "dir", "ref", "mode", "enabled", "ttl", "length":
		if len(w) > 1 {
			return ""
		}
	}
	pair := func(i int, a, b string) bool { return w[i] == a && i+1 < len(w) && w[i+1] == b }
	for i, x := range w {
		switch {
		case strings.Contains(x, "password") || strings.Contains(x, "passwd") || strings.Contains(x, "passphrase") || x == "pwd":
			return RuleKeyPassword
		case strings.Contains(x, "secret"):
			return RuleKeySecret
		case x == "apikey" || pair(i, "api", "key"):
			return RuleKeyAPIKey
		case x == "accesskey" || pair(i, "access", "key"):
			return RuleKeyAccessKey
		case x == "privatekey" || pair(i, "private", "key"):
			return RuleKeyPrivateKey
		case strings.HasPrefix(x, "credential") || strings.HasPrefix(x, "creds"):
			return RuleKeyCredential
		case x == "auth" || strings.HasPrefix(x, "auth") && (strings.HasSuffix(x, "token") || strings.HasSuffix(x, "key")):
			return RuleKeyAuth
		case x == "token" || strings.HasSuffix(x, "token") && len(x) > len("token"):
			if i > 0 && x == "token" {
				switch w[i-1] {
				case "max", "num", "eos", "bos", "pad", "unk", "sep", "cls", "mask":
					continue
				}
			}
			return RuleKeyToken
		}
	}
	return ""
}

// words splits a name into lower-case words at _ - . / space and at a
// lower-to-upper case change (secretAccessKey: secret, access, key).
func words(name string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	prevLower := false
	for _, r := range name {
		switch {
		case r == '_' || r == '-' || r == '.' || r == '/' || unicode.IsSpace(r):
			flush()
			prevLower = false
			continue
		case unicode.IsUpper(r) && prevLower:
			flush()
		}
		cur = append(cur, r)
		prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
	}
	flush()
	return out
}

// namesDigest says whether a key names a digest, whose hex value is not a
// secret: IMAGE_SHA, git_commit, configHash.
func namesDigest(key string) bool {
	for _, w := range words(key) {
		switch w {
		case "sha", "sha1", "sha256", "sha512", "digest", "hash", "commit", "checksum", "revision", "rev", "md5":
			return true
		}
	}
	return false
}

func mixedCase(s string) bool {
	var up, low, dig bool
	for _, r := range s {
		up = up || r >= 'A' && r <= 'Z'
		low = low || r >= 'a' && r <= 'z'
		dig = dig || r >= '0' && r <= '9'
	}
	return up && low && dig
}

// entropy is the Shannon entropy of s in bits per character.
func entropy(s string) float64 {
	counts := map[rune]int{}
	n := 0
	for _, r := range s {
		counts[r]++
		n++
	}
	var h float64
	for _, c := range counts {
		p := float64(c) / float64(n)
		h -= p * math.Log2(p)
	}
	return h
}

// isText says whether b reads as text: valid UTF-8 without control
// characters other than whitespace.
func isText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' || r == 0x7f {
			return false
		}
	}
	return true
}
