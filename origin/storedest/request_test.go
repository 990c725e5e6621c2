package storedest

import (
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/storage"
)

func parse(t testing.TB, body string, opts Options) (Request, error) {
	t.Helper()
	o, err := field.ParseJSON([]byte(body))
	if err != nil {
		t.Fatalf("JSON %s: %v", body, err)
	}
	return ParseRequest(o, opts)
}

func paths(t testing.TB, err error) []string {
	t.Helper()
	var e *apierr.Error
	if !errors.As(err, &e) || e.Status != 400 {
		t.Fatalf("err = %v, want a 400 *apierr.Error", err)
	}
	var out []string
	for _, f := range e.Fields {
		if f.Message == "" {
			t.Fatalf("validation error for %s has no message", f.Path)
		}
		out = append(out, f.Path)
	}
	return out
}

const (
	account     = "0123456789abcdef0123456789abcdef"
	testRoleARN = "arn:aws:iam::123456789012:role/pictor-writer"
)

// conns are a valid connection_info per provider (JSON members).
var conns = map[storage.Provider]string{
	storage.AWSS3:              `"provider":"aws_s3","bucket":"renders","region":"us-east-1","role_arn":"` + testRoleARN + `"`,
	storage.CloudflareR2:       `"provider":"cloudflare_r2","bucket":"renders","cloudflare_account_id":"` + account + `","access_key_id":"AK","secret_access_key":"SK"`,
	storage.BackblazeB2:        `"provider":"backblaze_b2","bucket":"renders","region":"us-west-004","access_key_id":"AK","secret_access_key":"SK"`,
	storage.DigitalOceanSpaces: `"provider":"digitalocean_spaces","bucket":"renders","region":"nyc3","access_key_id":"AK","secret_access_key":"SK"`,
	storage.Wasabi:             `"provider":"wasabi","bucket":"renders","region":"eu-central-1","access_key_id":"AK","secret_access_key":"SK"`,
	storage.GoogleCloudStorage: `"provider":"google_cloud_storage","bucket":"renders","access_key_id":"AK","secret_access_key":"SK"`,
	storage.OtherS3Compatible:  `"provider":"other_s3_compatible","bucket":"renders","endpoint":"https://s3.example.com","access_key_id":"AK","secret_access_key":"SK"`,
}

// dest is a request with the provider's valid connection plus extra
// connection members (JSON text; a member repeated later wins).
func dest(p storage.Provider, extra string) string {
	c := conns[p]
	if extra != "" {
		c += "," + extra
	}
	return `{"name":"My bucket","connection_info":{` + c + `}}`
}

// TestParseValid: what each provider's request becomes.
func TestParseValid(t *testing.T) {
	keys := func(c storage.Connection) storage.Connection {
		c.AccessKeyID, c.SecretAccessKey = "AK", "SK"
		return c
	}
	for _, tc := range []struct {
		name string
		body string
		opts Options
		want Request
	}{
		{"aws_s3", `{"name":"  Renders  ","disabled":true,"hcti_storage_disabled":true,"connection_info":{"provider":"aws_s3","bucket":"my-bucket.example",
			"key_prefix":"/renders//2026/","region":"US-East-1","role_arn":"arn:aws:iam::123456789012:role/service-role/pictor_writer+=,.@-"}}`, Options{},
			Request{Name: "Renders", Disabled: true, HctiStorageDisabled: true, Connection: storage.Connection{Provider: storage.AWSS3, Bucket: "my-bucket.example",
				KeyPrefix: "renders/2026", Region: "us-east-1", RoleARN: "arn:aws:iam::123456789012:role/service-role/pictor_writer+=,.@-"}}},
		{"aws_s3 with other providers' fields null and retain false", dest(storage.AWSS3, `"access_key_id":null,"secret_access_key":null,"endpoint":null,
			"cloudflare_jurisdiction":null,"retain_secret_access_key":false,"surprise":{"a":1}`), Options{},
			Request{Name: "My bucket", Connection: storage.Connection{Provider: storage.AWSS3, Bucket: "renders", Region: "us-east-1", RoleARN: testRoleARN}}},
		{"cloudflare_r2", dest(storage.CloudflareR2, `"cloudflare_account_id":"`+strings.ToUpper(account)+`","cloudflare_jurisdiction":"eu"`), Options{},
			Request{Name: "My bucket", Connection: keys(storage.Connection{Provider: storage.CloudflareR2, Bucket: "renders", CloudflareAccountID: account, CloudflareJurisdiction: "eu"})}},
		{"cloudflare_r2 fedramp", dest(storage.CloudflareR2, `"cloudflare_jurisdiction":"fedramp"`), Options{},
			Request{Name: "My bucket", Connection: keys(storage.Connection{Provider: storage.CloudflareR2, Bucket: "renders", CloudflareAccountID: account, CloudflareJurisdiction: "fedramp"})}},
		{"cloudflare_r2 default jurisdiction", dest(storage.CloudflareR2, `"cloudflare_jurisdiction":"default"`), Options{},
			Request{Name: "My bucket", Connection: keys(storage.Connection{Provider: storage.CloudflareR2, Bucket: "renders", CloudflareAccountID: account})}},
		{"backblaze_b2", dest(storage.BackblazeB2, ""), Options{},
			Request{Name: "My bucket", Connection: keys(storage.Connection{Provider: storage.BackblazeB2, Bucket: "renders", Region: "us-west-004"})}},
		{"digitalocean_spaces", dest(storage.DigitalOceanSpaces, `"region":"AMS3"`), Options{},
			Request{Name: "My bucket", Connection: keys(storage.Connection{Provider: storage.DigitalOceanSpaces, Bucket: "renders", Region: "ams3"})}},
		{"wasabi", dest(storage.Wasabi, ""), Options{},
			Request{Name: "My bucket", Connection: keys(storage.Connection{Provider: storage.Wasabi, Bucket: "renders", Region: "eu-central-1"})}},
		{"google_cloud_storage", dest(storage.GoogleCloudStorage, `"key_prefix":"a/b"`), Options{},
			Request{Name: "My bucket", Connection: keys(storage.Connection{Provider: storage.GoogleCloudStorage, Bucket: "renders", KeyPrefix: "a/b"})}},
		{"aws_s3 in China", dest(storage.AWSS3, `"region":"cn-north-1","role_arn":"arn:aws-cn:iam::123456789012:role/x"`), Options{},
			Request{Name: "My bucket", Connection: storage.Connection{Provider: storage.AWSS3, Bucket: "renders", Region: "cn-north-1", RoleARN: "arn:aws-cn:iam::123456789012:role/x"}}},
		{"aws_s3 in GovCloud", dest(storage.AWSS3, `"region":"us-gov-west-1","role_arn":"arn:aws-us-gov:iam::123456789012:role/x"`), Options{},
			Request{Name: "My bucket", Connection: storage.Connection{Provider: storage.AWSS3, Bucket: "renders", Region: "us-gov-west-1", RoleARN: "arn:aws-us-gov:iam::123456789012:role/x"}}},
		{"other_s3_compatible defaults", dest(storage.OtherS3Compatible, `"endpoint":"HTTPS://S3.Example.COM:443/"`), Options{},
			Request{Name: "My bucket", Connection: keys(storage.Connection{Provider: storage.OtherS3Compatible, Bucket: "renders", Endpoint: "https://s3.example.com",
				Region: DefaultRegion, ForcePathStyle: true})}},
		{"other_s3_compatible private with region and virtual hosts", dest(storage.OtherS3Compatible, `"endpoint":"http://10.0.0.5:9000","region":"garage","force_path_style":false`),
			Options{AllowPrivate: true},
			Request{Name: "My bucket", Connection: keys(storage.Connection{Provider: storage.OtherS3Compatible, Bucket: "renders", Endpoint: "http://10.0.0.5:9000",
				Region: "garage"})}},
		{"other_s3_compatible IPv6", dest(storage.OtherS3Compatible, `"endpoint":"http://[2606:4700:4700::ABCD]:8080"`), Options{},
			Request{Name: "My bucket", Connection: keys(storage.Connection{Provider: storage.OtherS3Compatible, Bucket: "renders", Endpoint: "http://[2606:4700:4700::abcd]:8080",
				Region: DefaultRegion, ForcePathStyle: true})}},
		{"retain", dest(storage.Wasabi, `"secret_access_key":"","retain_secret_access_key":true`), Options{},
			Request{Name: "My bucket", RetainSecret: true, Connection: storage.Connection{Provider: storage.Wasabi, Bucket: "renders", Region: "eu-central-1", AccessKeyID: "AK"}}},
		{"retain without a secret member", `{"name":"abc","connection_info":{"provider":"google_cloud_storage","bucket":"abc","access_key_id":"AK","retain_secret_access_key":true}}`, Options{},
			Request{Name: "abc", RetainSecret: true, Connection: storage.Connection{Provider: storage.GoogleCloudStorage, Bucket: "abc", AccessKeyID: "AK"}}},
		{"unknown and answer fields ignored", `{"id":"x","enabled":false,"last_tested_at":1,"name":"abc","connection_info":{` + conns[storage.GoogleCloudStorage] + `,"colour":"red"}}`, Options{},
			Request{Name: "abc", Connection: keys(storage.Connection{Provider: storage.GoogleCloudStorage, Bucket: "renders"})}},
		{"nulls are defaults", `{"name":"abc","disabled":null,"hcti_storage_disabled":null,"connection_info":{` + conns[storage.OtherS3Compatible] + `,"key_prefix":null,"region":null,"force_path_style":null}}`, Options{},
			Request{Name: "abc", Connection: keys(storage.Connection{Provider: storage.OtherS3Compatible, Bucket: "renders", Endpoint: "https://s3.example.com", Region: DefaultRegion, ForcePathStyle: true})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parse(t, tc.body, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestParseInvalid: each violation is named, all of them at once, and
// nothing else is.
func TestParseInvalid(t *testing.T) {
	const ci = "connection_info."
	long := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct {
		name  string
		body  string
		opts  Options
		paths []string
	}{
		{"empty", `{}`, Options{}, []string{"name", "connection_info"}},
		{"nulls", `{"name":null,"connection_info":null}`, Options{}, []string{"name", "connection_info"}},
		{"connection_info a string", `{"name":"abc","connection_info":"aws_s3"}`, Options{}, []string{"connection_info"}},
		{"connection_info an array", `{"name":"abc","connection_info":[{"provider":"aws_s3"}]}`, Options{}, []string{"connection_info"}},
		{"connection_info empty", `{"name":"abc","connection_info":{}}`, Options{}, []string{ci + "provider", ci + "bucket"}},
		{"unknown provider", `{"name":"abc","connection_info":{"provider":"s3","bucket":"abc"}}`, Options{}, []string{ci + "provider"}},
		{"provider not a string", `{"name":"abc","connection_info":{"provider":1,"bucket":"abc"}}`, Options{}, []string{ci + "provider"}},
		{"name too short", `{"name":" ab ","connection_info":{` + conns[storage.AWSS3] + `}}`, Options{}, []string{"name"}},
		{"name too long", `{"name":"` + long(256) + `","connection_info":{` + conns[storage.AWSS3] + `}}`, Options{}, []string{"name"}},
		{"name with a newline", `{"name":"my\nbucket","connection_info":{` + conns[storage.AWSS3] + `}}`, Options{}, []string{"name"}},
		{"name not a string", `{"name":123,"connection_info":{` + conns[storage.AWSS3] + `}}`, Options{}, []string{"name"}},
		{"booleans as strings", `{"name":"abc","disabled":"true","hcti_storage_disabled":1,"connection_info":{` + conns[storage.AWSS3] + `}}`, Options{},
			[]string{"disabled", "hcti_storage_disabled"}},
		{"several at once", `{"name":"a","disabled":"no","connection_info":{"provider":"other_s3_compatible","bucket":"A","key_prefix":"../x",
			"endpoint":"ftp://x","region":"a/b","force_path_style":"yes","access_key_id":"with space","secret_access_key":"SK","role_arn":"x"}}`, Options{},
			[]string{"name", "disabled", ci + "bucket", ci + "key_prefix", ci + "role_arn", ci + "endpoint", ci + "region", ci + "force_path_style", ci + "access_key_id"}},

		{"aws_s3 requires region and role", `{"name":"abc","connection_info":{"provider":"aws_s3","bucket":"abc"}}`, Options{}, []string{ci + "region", ci + "role_arn"}},
		{"aws_s3 region shape", dest(storage.AWSS3, `"region":"useast1"`), Options{}, []string{ci + "region"}},
		{"aws_s3 role account", dest(storage.AWSS3, `"role_arn":"arn:aws:iam::12345678901:role/x"`), Options{}, []string{ci + "role_arn"}},
		{"aws_s3 a user", dest(storage.AWSS3, `"role_arn":"arn:aws:iam::123456789012:user/x"`), Options{}, []string{ci + "role_arn"}},
		{"aws_s3 role of another partition", dest(storage.AWSS3, `"role_arn":"arn:aws-cn:iam::123456789012:role/x"`), Options{}, []string{ci + "region"}},
		{"aws_s3 region of another partition", dest(storage.AWSS3, `"region":"us-gov-west-1"`), Options{}, []string{ci + "region"}},
		{"aws_s3 isolated partition", dest(storage.AWSS3, `"region":"us-iso-east-1"`), Options{}, []string{ci + "region"}},
		{"aws_s3 unknown partition", dest(storage.AWSS3, `"role_arn":"arn:aws-iso:iam::123456789012:role/x"`), Options{}, []string{ci + "role_arn"}},
		{"aws_s3 role name too long", dest(storage.AWSS3, `"role_arn":"arn:aws:iam::123456789012:role/`+long(65)+`"`), Options{}, []string{ci + "role_arn"}},
		{"aws_s3 empty role name", dest(storage.AWSS3, `"role_arn":"arn:aws:iam::123456789012:role/"`), Options{}, []string{ci + "role_arn"}},
		{"aws_s3 takes no keys", dest(storage.AWSS3, `"access_key_id":"AK","secret_access_key":"SK","retain_secret_access_key":true`), Options{},
			[]string{ci + "access_key_id", ci + "secret_access_key", ci + "retain_secret_access_key"}},
		{"aws_s3 takes no endpoint or account", dest(storage.AWSS3, `"endpoint":"https://s3.example.com","cloudflare_account_id":"`+account+`","force_path_style":false`), Options{},
			[]string{ci + "cloudflare_account_id", ci + "endpoint", ci + "force_path_style"}},

		{"r2 requires account and keys", `{"name":"abc","connection_info":{"provider":"cloudflare_r2","bucket":"abc"}}`, Options{},
			[]string{ci + "cloudflare_account_id", ci + "access_key_id", ci + "secret_access_key"}},
		{"r2 account too short", dest(storage.CloudflareR2, `"cloudflare_account_id":"`+account[1:]+`"`), Options{}, []string{ci + "cloudflare_account_id"}},
		{"r2 account not hex", dest(storage.CloudflareR2, `"cloudflare_account_id":"`+strings.Repeat("g", 32)+`"`), Options{}, []string{ci + "cloudflare_account_id"}},
		{"r2 jurisdiction", dest(storage.CloudflareR2, `"cloudflare_jurisdiction":"us"`), Options{}, []string{ci + "cloudflare_jurisdiction"}},
		{"r2 jurisdiction spelled out", dest(storage.CloudflareR2, `"cloudflare_jurisdiction":"European Union"`), Options{}, []string{ci + "cloudflare_jurisdiction"}},
		{"r2 takes no region", dest(storage.CloudflareR2, `"region":"auto"`), Options{}, []string{ci + "region"}},

		{"b2 requires region", `{"name":"abc","connection_info":{"provider":"backblaze_b2","bucket":"abc","access_key_id":"AK","secret_access_key":"SK"}}`, Options{}, []string{ci + "region"}},
		{"b2 region with a dot", dest(storage.BackblazeB2, `"region":"us-west-004.evil.example"`), Options{}, []string{ci + "region"}},
		{"spaces region with a slash", dest(storage.DigitalOceanSpaces, `"region":"nyc3/x"`), Options{}, []string{ci + "region"}},
		{"wasabi region with an underscore", dest(storage.Wasabi, `"region":"us_east_1"`), Options{}, []string{ci + "region"}},
		{"wasabi region too long", dest(storage.Wasabi, `"region":"`+long(65)+`"`), Options{}, []string{ci + "region"}},
		{"gcs takes no region, role or endpoint", dest(storage.GoogleCloudStorage, `"region":"auto","role_arn":"`+testRoleARN+`","endpoint":"https://storage.googleapis.com"`), Options{},
			[]string{ci + "region", ci + "role_arn", ci + "endpoint"}},

		{"other requires endpoint", `{"name":"abc","connection_info":{"provider":"other_s3_compatible","bucket":"abc","access_key_id":"AK","secret_access_key":"SK"}}`, Options{},
			[]string{ci + "endpoint"}},
		{"other takes no jurisdiction", dest(storage.OtherS3Compatible, `"cloudflare_jurisdiction":"eu"`), Options{}, []string{ci + "cloudflare_jurisdiction"}},
		{"other region with a slash", dest(storage.OtherS3Compatible, `"region":"us/east"`), Options{}, []string{ci + "region"}},

		{"access key id missing", dest(storage.Wasabi, `"access_key_id":null`), Options{}, []string{ci + "access_key_id"}},
		{"access key id empty", dest(storage.Wasabi, `"access_key_id":""`), Options{}, []string{ci + "access_key_id"}},
		{"access key id too long", dest(storage.Wasabi, `"access_key_id":"`+long(257)+`"`), Options{}, []string{ci + "access_key_id"}},
		{"access key id with a space", dest(storage.Wasabi, `"access_key_id":"AK 1"`), Options{}, []string{ci + "access_key_id"}},
		{"secret missing", dest(storage.Wasabi, `"secret_access_key":null`), Options{}, []string{ci + "secret_access_key"}},
		{"secret empty", dest(storage.Wasabi, `"secret_access_key":""`), Options{}, []string{ci + "secret_access_key"}},
		{"secret not a string", dest(storage.Wasabi, `"secret_access_key":12345678`), Options{}, []string{ci + "secret_access_key"}},
		{"secret with a control character", dest(storage.Wasabi, `"secret_access_key":"a\u0000b"`), Options{}, []string{ci + "secret_access_key"}},
		{"secret too long", dest(storage.Wasabi, `"secret_access_key":"`+long(257)+`"`), Options{}, []string{ci + "secret_access_key"}},
		{"secret and retain", dest(storage.Wasabi, `"retain_secret_access_key":true`), Options{}, []string{ci + "retain_secret_access_key"}},
		{"retain not a boolean", dest(storage.Wasabi, `"secret_access_key":null,"retain_secret_access_key":"true"`), Options{},
			[]string{ci + "retain_secret_access_key", ci + "secret_access_key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, tc.body, tc.opts)
			got := paths(t, err)
			want := slices.Clone(tc.paths)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("validation errors on %q, want %q (%v)", got, want, err)
			}
		})
	}
}

// TestBucket: S3's bucket naming rules.
func TestBucket(t *testing.T) {
	for _, tc := range []struct {
		bucket string
		ok     bool
	}{
		{"abc", true}, {"my-bucket", true}, {"my.bucket.example", true}, {"1bucket", true}, {"bucket1", true},
		{strings.Repeat("a", 63), true}, {"1.2.3.4.5", true}, {"1.2.3.a", true}, {"a-b--c", true}, {"xn-bucket", true},
		{"ab", false}, {strings.Repeat("a", 64), false}, {"My-Bucket", false}, {"my_bucket", false}, {"my bucket", false},
		{"-bucket", false}, {"bucket-", false}, {".bucket", false}, {"bucket.", false}, {"my..bucket", false},
		{"my.-bucket", false}, {"my-.bucket", false}, {"192.168.5.4", false}, {"xn--bucket", false}, {"sthree-bucket", false},
		{"amzn-s3-demo-bucket", false}, {"bucket-s3alias", false}, {"bucket--ol-s3", false}, {"bucket.mrap", false},
		{"bucket--x-s3", false}, {"bucket--table-s3", false}, {"bücket", false}, {"", false},
	} {
		t.Run(tc.bucket, func(t *testing.T) {
			if problem := checkBucket(tc.bucket); (problem == "") != tc.ok {
				t.Fatalf("checkBucket(%q) = %q, want ok=%v", tc.bucket, problem, tc.ok)
			}
		})
	}
}

// TestKeyPrefix: normalization and refusals.
func TestKeyPrefix(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		ok             bool
	}{
		{"empty", "", "", true},
		{"slashes only", "///", "", true},
		{"plain", "renders", "renders", true},
		{"surrounding slashes", "/renders/2026/", "renders/2026", true},
		{"runs of slashes", "a//b///c", "a/b/c", true},
		{"spaces and unicode kept", " a b/ü ", " a b/ü ", true},
		{"dots inside a name", "a..b/.c/d.", "a..b/.c/d.", true},
		{"at the limit", strings.Repeat("a", MaxKeyPrefix), strings.Repeat("a", MaxKeyPrefix), true},
		{"at the limit once normalized", "/" + strings.Repeat("a", MaxKeyPrefix) + "/", strings.Repeat("a", MaxKeyPrefix), true},
		{"too long", strings.Repeat("a", MaxKeyPrefix+1), "", false},
		{"too long in bytes", strings.Repeat("ü", MaxKeyPrefix/2+1), "", false},
		{"parent", "a/../b", "", false},
		{"parent at the end", "a/..", "", false},
		{"current", "./a", "", false},
		{"control character", "a\nb", "", false},
		{"NUL", "a\x00b", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, problem := NormalizeKeyPrefix(tc.in)
			if (problem == "") != tc.ok || got != tc.want {
				t.Fatalf("NormalizeKeyPrefix(%q) = %q, %q; want %q ok=%v", tc.in, got, problem, tc.want, tc.ok)
			}
		})
	}
}

// TestEndpoint: normalization, and the hosts refused.
func TestEndpoint(t *testing.T) {
	for _, tc := range []struct {
		in, want     string
		allowPrivate bool
	}{
		{"https://s3.example.com", "https://s3.example.com", false},
		{"HTTPS://S3.Example.COM:443/", "https://s3.example.com", false},
		{"http://s3.example.com:80", "http://s3.example.com", false},
		{"http://s3.example.com:443", "http://s3.example.com:443", false},
		{"https://s3.example.com:9000", "https://s3.example.com:9000", false},
		{"https://93.184.215.14", "https://93.184.215.14", false},
		{"http://[2606:4700:4700::1111]:9000/", "http://[2606:4700:4700::1111]:9000", false},
		{"http://127.0.0.1:7070", "http://127.0.0.1:7070", true},
		{"http://localhost:7070", "http://localhost:7070", true},
		{"https://gw.example.com/s3/", "https://gw.example.com/s3", false},
		{"HTTPS://GW.example.com:443/S3/v1.0_~x", "https://gw.example.com/S3/v1.0_~x", false},

		{"s3.example.com", "", false},
		{"//s3.example.com", "", false},
		{"ftp://s3.example.com", "", false},
		{"https://", "", false},
		{"https://user:pass@s3.example.com", "", false},
		{"https://s3.example.com//bucket", "", false},
		{"https://s3.example.com/a/../b", "", false},
		{"https://s3.example.com/./b", "", false},
		{"https://s3.example.com/a%2Fb", "", false},
		{"https://s3.example.com/a b", "", false},
		{"https://s3.example.com/a;b", "", false},
		{"https://s3.example.com/?", "", false},
		{"https://s3.example.com?x=1", "", false},
		{"https://s3.example.com#x", "", false},
		{"https://s3.example.com:", "", false},
		{"https://s3.example.com:0", "", false},
		{"https://s3.example.com:080", "", false},
		{"https://s3.example.com:65536", "", false},
		{"https://s3_x.example.com", "", false},
		{"https://bücher.example", "", false},
		{"https://-a.example", "", false},
		{"https://a..example", "", false},
		{"https://s3.example.com.", "", false},
		{"https://s3.example.com\\@evil.example", "", false},
		{" https://s3.example.com", "", false},
		{"http://127.0.0.1:7070", "", false},
		{"http://10.1.2.3", "", false},
		{"http://[::1]", "", false},
		{"http://localhost:7070", "", false},
		{"http://2130706433", "", true},
		{"http://0x7f.1", "", true},
		{"http://01.2.3.4", "", true},
		{"http://169.254.169.254", "", true},
		{"http://metadata.google.internal", "", true},
		{"http://[fe80::1%25eth0]", "", true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			norm, problem := NormalizeEndpoint(tc.in)
			if problem == "" {
				problem = checkEndpointHost(norm, tc.allowPrivate)
			}
			if tc.want == "" {
				if problem == "" {
					t.Fatalf("%q accepted as %q", tc.in, norm)
				}
				return
			}
			if problem != "" || norm != tc.want {
				t.Fatalf("NormalizeEndpoint(%q) = %q, %q; want %q", tc.in, norm, problem, tc.want)
			}
		})
	}
}

// TestMessagesHideSecrets: no validation message repeats a secret, valid
// or not.
func TestMessagesHideSecrets(t *testing.T) {
	for _, secret := range []string{"wJalrXUtnFEMI/K7MDENG bPxRfiCYEXAMPLEKEY", strings.Repeat("S", 300), "ab\u0001cdefghijklmnop"} {
		raw, _ := json.Marshal(secret)
		body := `{"name":"x","connection_info":{"provider":"wasabi","bucket":"B","region":"?","access_key_id":"AK","secret_access_key":` + string(raw) + `}}`
		_, err := parse(t, body, Options{})
		b, _ := json.Marshal(apierr.From(err).Body())
		if strings.Contains(string(b), secret) || strings.Contains(err.Error(), secret) {
			t.Fatalf("the error repeats the secret: %s", b)
		}
		if !slices.Contains(paths(t, err), "connection_info.secret_access_key") {
			t.Fatalf("the invalid secret is not named: %s", b)
		}
	}
}

// fieldPaths are the paths a validation error may name.
var fieldPaths = func() []string {
	out := []string{"name", "disabled", "hcti_storage_disabled", "connection_info", "connection_info.provider", "connection_info.bucket", "connection_info.key_prefix"}
	for _, f := range providerFields {
		out = append(out, "connection_info."+f)
	}
	return out
}()

func FuzzParseRequest(f *testing.F) {
	for _, p := range Providers {
		f.Add([]byte(dest(p, "")), false)
		f.Add([]byte(dest(p, `"key_prefix":"//a/./b","retain_secret_access_key":true,"secret_access_key":null`)), true)
	}
	for _, seed := range []string{
		`{}`, `{"name":null,"connection_info":null}`, `{"name":"abc","connection_info":{"provider":"aws_s3","bucket":"1.2.3.4"}}`,
		dest(storage.OtherS3Compatible, `"endpoint":"http://[::1]:9000","region":"","force_path_style":0`),
		dest(storage.CloudflareR2, `"cloudflare_jurisdiction":null,"region":null,"cloudflare_account_id":"ABCDEF0123456789ABCDEF0123456789"`),
	} {
		f.Add([]byte(seed), false)
	}
	f.Fuzz(func(t *testing.T, b []byte, allowPrivate bool) {
		o, err := field.ParseJSON(b)
		if err != nil {
			return
		}
		req, err := ParseRequest(o, Options{AllowPrivate: allowPrivate})
		if err != nil {
			for _, p := range paths(t, err) {
				if !slices.Contains(fieldPaths, p) {
					t.Fatalf("validation error on unexpected path %q", p)
				}
			}
			return
		}
		if n := utf8.RuneCountInString(req.Name); n < MinName || n > MaxName || strings.TrimSpace(req.Name) != req.Name {
			t.Fatalf("name %q", req.Name)
		}
		c := req.Connection
		if !slices.Contains(Providers, c.Provider) || checkBucket(c.Bucket) != "" || c.ExternalID != "" {
			t.Fatalf("accepted %+v", c)
		}
		if p, problem := NormalizeKeyPrefix(c.KeyPrefix); problem != "" || p != c.KeyPrefix {
			t.Fatalf("key prefix %q is not normalized", c.KeyPrefix)
		}
		// Nothing a provider does not take is set.
		set := map[string]bool{
			fRegion: c.Region != "", fRoleARN: c.RoleARN != "", fAccountID: c.CloudflareAccountID != "", fJurisdiction: c.CloudflareJurisdiction != "",
			fEndpoint: c.Endpoint != "", fPathStyle: c.ForcePathStyle, fAccessKeyID: c.AccessKeyID != "", fSecret: c.SecretAccessKey != "", fRetain: req.RetainSecret,
		}
		for f, on := range set {
			if on && !slices.Contains(takes[c.Provider], f) {
				t.Fatalf("%s set for %s: %+v", f, c.Provider, req)
			}
		}
		if UsesAccessKeys(c.Provider) {
			if c.AccessKeyID == "" || (c.SecretAccessKey == "") == !req.RetainSecret {
				t.Fatalf("access keys %+v", req)
			}
		}
		switch c.Provider {
		case storage.AWSS3:
			if checkRoleARN(c.RoleARN) != "" || storage.CheckRegion(c.Provider, c.Region) != "" || regionPartition(c.Region) != arnPartition(c.RoleARN) {
				t.Fatalf("aws %+v", c)
			}
		case storage.CloudflareR2:
			if len(c.CloudflareAccountID) != 32 || strings.Trim(c.CloudflareAccountID, "0123456789abcdef") != "" {
				t.Fatalf("account %q", c.CloudflareAccountID)
			}
		case storage.BackblazeB2, storage.DigitalOceanSpaces, storage.Wasabi:
			if storage.CheckRegion(c.Provider, c.Region) != "" || c.Region != strings.ToLower(c.Region) {
				t.Fatalf("region %q", c.Region)
			}
		case storage.OtherS3Compatible:
			if e, problem := NormalizeEndpoint(c.Endpoint); problem != "" || e != c.Endpoint || c.Region == "" {
				t.Fatalf("endpoint %q (%s), region %q", c.Endpoint, problem, c.Region)
			}
		}
	})
}

func FuzzKeyPrefix(f *testing.F) {
	for _, s := range []string{"", "/", "a//b/", "../a", "a/./b", "a/b/..", "ü/é", "a\x00", strings.Repeat("ab/", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, problem := NormalizeKeyPrefix(s)
		if problem != "" {
			if p != "" {
				t.Fatalf("%q: %q with problem %q", s, p, problem)
			}
			return
		}
		again, problem := NormalizeKeyPrefix(p)
		if problem != "" || again != p {
			t.Fatalf("%q normalizes to %q, which reads back as %q (%s)", s, p, again, problem)
		}
		if len(p) > MaxKeyPrefix || strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.Contains(p, "//") {
			t.Fatalf("%q normalizes to %q", s, p)
		}
		for seg := range strings.SplitSeq(p, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("%q normalizes to %q", s, p)
			}
		}
	})
}

func FuzzEndpoint(f *testing.F) {
	for _, s := range []string{
		"https://s3.example.com", "HTTP://S3.EXAMPLE.COM:80/", "http://[::1]:9000", "https://1.2.3.4:443", "https://a@b",
		"https://b/c", "https://b?", "https://b#", "https://%62.example", "https://b:", "http://[fe80::1%25en0]", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		norm, problem := NormalizeEndpoint(s)
		if problem != "" {
			if norm != "" {
				t.Fatalf("%q: %q with problem %q", s, norm, problem)
			}
			return
		}
		again, problem := NormalizeEndpoint(norm)
		if problem != "" || again != norm {
			t.Fatalf("%q normalizes to %q, which reads back as %q (%s)", s, norm, again, problem)
		}
		u, err := url.Parse(norm)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || strings.HasSuffix(u.Path, "/") || u.RawPath != "" ||
			u.RawQuery != "" || u.Fragment != "" || u.Hostname() == "" || u.Host != strings.ToLower(u.Host) {
			t.Fatalf("%q normalizes to %q (%#v, %v)", s, norm, u, err)
		}
	})
}
