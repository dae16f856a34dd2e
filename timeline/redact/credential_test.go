package redact

import (
	"testing"
)

// TestCredential holds, for each rule, values it must catch and ordinary
// config it must leave in clear. The Falco cases are the values of Falco's
// trace file create_configmap_sensitive_values.json.
func TestCredential(t *testing.T) {
	tests := []struct {
		key, value string
		want       string // rule, or "" for clear
	}{
		// key rules
		{"password", "hunter2", RuleKeyPassword},
		{"MYSQL_PASSWORD", "hunter2", RuleKeyPassword},
		{"dbPassword", "hunter2", RuleKeyPassword},
		{"smtp_passwd", "x", RuleKeyPassword},
		{"GPG_PASSPHRASE", "correct horse", RuleKeyPassword},
		{"PWD", "x", RuleKeyPassword},
		{"PASSWORD_FILE", "/etc/creds/pw", ""},
		{"client_secret", "abc", RuleKeySecret},
		{"secretAccessKey", "abc", RuleKeySecret},
		{"AWS_SECRET_ACCESS_KEY", "abc", RuleKeySecret},
		{"SECRET_NAME", "trainer-creds", ""},
		{"HF_TOKEN", "hf_abc", RuleKeyToken},
		{"githubToken", "x", RuleKeyToken},
		{"SLACK_BOT_TOKEN", "x", RuleKeyToken},
		{"authtoken", "x", RuleKeyAuth},
		{"TOKENIZER_PATH", "/models/tok", ""},
		{"tokenizer", "bpe", ""},
		{"MAX_TOKENS", "4096", ""},
		{"pad_token", "<pad>", ""},
		{"eos_token", "</s>", ""},
		{"TOKEN_TTL", "3600", ""},
		{"API_KEY", "k", RuleKeyAPIKey},
		{"apiKey", "k", RuleKeyAPIKey},
		{"APIKEY", "k", RuleKeyAPIKey},
		{"aws_access_key_id", "MY-ID", RuleKeyAccessKey},
		{"aws-s3-access-key-id", "MY-ID", RuleKeyAccessKey},
		{"accesskey", "MY-ID", RuleKeyAccessKey},
		{"ACCESS_LOG", "/var/log/access.log", ""},
		{"private_key", "x", RuleKeyPrivateKey},
		{"privateKey", "x", RuleKeyPrivateKey},
		{"PRIVATE_REGISTRY", "registry.local", ""},
		{"credentials", "{}", RuleKeyCredential},
		{"GOOGLE_APPLICATION_CREDENTIALS_JSON", "{}", RuleKeyCredential},
		{"creds", "x", RuleKeyCredential},
		{"GOOGLE_APPLICATION_CREDENTIALS", "/var/run/creds.json", RuleKeyCredential},
		{"auth", "basic", RuleKeyAuth},
		{"BASIC_AUTH", "user:pw", RuleKeyAuth},
		{"authKey", "x", RuleKeyAuth},
		{"AUTHOR", "alice", ""},
		{"authority", "https://login.example.com", ""},
		{"password", "", ""}, // nothing to hide

		// value rules
		{"id", "AKIAIOSFODNN7EXAMPLE", RuleAWSAccessKeyID},
		{"config", "key=ASIAY34FZKBOKMUTVV7A\n", RuleAWSAccessKeyID},
		{"id", "AKIA-not-a-key", ""},
		{"tls.key", "-----BEGIN RSA PRIVATE KEY-----\nMIIE...\n-----END RSA PRIVATE KEY-----\n", RulePrivateKeyBlock},
		{"key.pem", "-----BEGIN PRIVATE KEY-----\nMIIE\n", RulePrivateKeyBlock},
		{"id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n", RulePrivateKeyBlock},
		{"ca.crt", "-----BEGIN CERTIFICATE-----\nMIIDGTCCAgGgAwIBAgIUYRWoE9BQjJ1iseULkqRbeBrpC3IwDQYJKoZIhvcNAQEL\n-----END CERTIFICATE-----\n", ""},
		{"header", "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", RuleJWT},
		{"note", "eyJ is how base64 JSON starts", ""},
		{"access.properties", "aws_access_key_id = MY-ID\naws_secret_access_key = MY-KEY\n", RuleCredentialPair},
		{"access.properties", "aws-access-key-id = MY-ID\n", RuleCredentialPair},
		{"access.properties", "aws_s3_access_key_id = MY-ID\n", RuleCredentialPair},
		{"access.properties", "aws-s3-access-key-id = MY-ID\n", RuleCredentialPair},
		{"access.properties", "password = MY-ID\n", RuleCredentialPair},
		{"access.properties", "passphrase = MY-ID\n", RuleCredentialPair},
		{"app.json", `{"db": {"host": "db", "password": "x"}}`, RuleCredentialPair},
		{"settings.yaml", "db:\n  host: db.local\n  password: hunter2\n", RuleCredentialPair},
		{"DSN", "host=db user=app password=hunter2", RuleCredentialPair},
		{"CALLBACK", "https://hooks.example.com/x?token=abc", RuleCredentialPair},
		{"ui.properties", "color.good=purple\ncolor.bad=yellow\nallow.textmode=true\n", ""},
		{"tuning.yaml", "lr: 0.001\nbatch_size: 64\nmax_tokens: 4096\ntokenizer: bpe\n", ""},
		{"DATABASE_URL", "postgres://app:hunter2@db:5432/app", RuleURLUserinfo},
		{"REDIS_URL", "redis://:hunter2@redis:6379/0", RuleURLUserinfo},
		{"DATABASE_URL", "postgres://app@db:5432/app", ""},
		{"ENDPOINT", "https://s3.us-east-1.amazonaws.com:443/bucket", ""},
		{"SIGNING", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", RuleHighEntropyBase64},
		{"blob", "Zm9vYmFyYmF6cXV4UXV1eDEyMzQ1Njc4OTBBQkNERUZHSElK", RuleHighEntropyBase64},
		{"DATA_DIR", "/mnt/datasets/imagenet/train/shards-0001", ""},
		{"MODE", "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzZZZZ1111", ""},
		{"PADDING", "00000000000000000000000000000000000000000001", ""},
		{"SESSION", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", RuleHighEntropyHex},
		{"GIT_COMMIT", "3f1c2b8e9d7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e", ""},
		{"IMAGE_SHA", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", ""},

		// ordinary config
		{"LR", "0.001", ""},
		{"BATCH_SIZE", "64", ""},
		{"WORLD_SIZE", "16", ""},
		{"NCCL_DEBUG", "INFO", ""},
		{"IMAGE", "registry.example.com/ml/trainer:v1.4.2", ""},
		{"IMAGE", "registry.example.com/ml/trainer@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", ""},
		{"CHECKPOINT_URL", "gs://ml-checkpoints/vision/run-42/step-1000", ""},
		{"since", "2026-11-30", ""},
		{"hostfile", "worker-0 slots=8\nworker-1 slots=8\n", ""},
	}
	for _, tt := range tests {
		if got := Credential(tt.key, tt.value); got != tt.want {
			t.Errorf("Credential(%q, %q) = %q, want %q", tt.key, tt.value, got, tt.want)
		}
	}
}

func TestWords(t *testing.T) {
	for in, want := range map[string]string{
		"aws_access_key_id":    "aws access key id",
		"secretAccessKey":      "secret access key",
		"TOKENIZER_PATH":       "tokenizer path",
		"gpu.product":          "gpu product",
		"HTTPProxy":            "httpproxy",
		"client-ca-file":       "client ca file",
		"x509Cert":             "x509 cert",
		"  spaced  name  ":     "spaced name",
		"ALREADY_UPPER_WORDS_": "already upper words",
	} {
		got := ""
		for i, w := range words(in) {
			if i > 0 {
				got += " "
			}
			got += w
		}
		if got != want {
			t.Errorf("words(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzCredential(f *testing.F) {
	f.Add("access.properties", "aws_access_key_id = MY-ID\naws_secret_access_key = MY-KEY\n")
	f.Add("LR", "0.001")
	f.Add("DATABASE_URL", "postgres://app:pw@db/app")
	f.Add("x", "-----BEGIN EC PRIVATE KEY-----")
	f.Fuzz(func(t *testing.T, key, value string) {
		r := Credential(key, value)
		if r != Credential(key, value) {
			t.Fatal("not deterministic")
		}
		if value == "" && r != "" {
			t.Fatalf("empty value matched %s", r)
		}
	})
}
