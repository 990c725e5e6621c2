package ogplatform

import (
	"strings"
	"testing"
)

// TestFromUserAgent has a row per crawler, with the User-Agent it really
// sends.
func TestFromUserAgent(t *testing.T) {
	for _, tc := range []struct {
		name string
		ua   string
		want Platform
	}{
		{"facebook", "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)", Facebook},
		{"facebook bot", "Facebot", Facebook},
		{"meta agent", "meta-externalagent/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)", Facebook},
		{"twitter", "Twitterbot/1.0", Twitter},
		{"linkedin", "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)", LinkedIn},
		{"slack", "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)", Slack},
		{"slack image proxy", "Slack-ImgProxy (+https://api.slack.com/robots)", Slack},
		{"discord", "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)", Discord},
		{"telegram", "TelegramBot (like TwitterBot)", Telegram},
		{"whatsapp", "WhatsApp/2.23.20.0 A", WhatsApp},
		{"pinterest", "Pinterest/0.2 (+https://www.pinterest.com/bot.html)", Pinterest},
		{"pinterest bot", "Mozilla/5.0 (compatible; Pinterestbot/1.0; +http://www.pinterest.com/bot.html)", Pinterest},
		{"mastodon", "http.rb/5.1.1 (Mastodon/4.2.0; +https://mastodon.social/)", Mastodon},
		{"bluesky", "Mozilla/5.0 (compatible; Bluesky Cardyb/1.1; +mailto:support@bsky.app)", Bluesky},
		{"imessage", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0", Apple},
		{"applebot", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)", Apple},
		{"reddit", "Mozilla/5.0 (compatible; redditbot/1.0; +http://www.reddit.com/feedback)", Reddit},
		{"instagram", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Instagram 300.0.0.0", Instagram},
		{"upper case", "TWITTERBOT/1.0", Twitter},
		{"browser", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36", Default},
		{"curl", "curl/8.5.0", Default},
		{"empty", "", Default},
		{"marker past the bound", strings.Repeat("x", maxUserAgent) + "Twitterbot", Default},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FromUserAgent(tc.ua); got != tc.want {
				t.Fatalf("FromUserAgent(%q) = %v, want %v", tc.ua, got, tc.want)
			}
			if got := FromUserAgent([]byte(tc.ua)); got != tc.want {
				t.Fatalf("FromUserAgent([]byte(%q)) = %v, want %v", tc.ua, got, tc.want)
			}
		})
	}
}

func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range All {
		if seen[p.Name] {
			t.Fatalf("platform %s listed twice", p.Name)
		}
		seen[p.Name] = true
		if p.Width <= 0 || p.Height <= 0 || p.Width > 4096 || p.Height > 4096 {
			t.Fatalf("platform %s has size %d×%d", p.Name, p.Width, p.Height)
		}
		if got, ok := ByName(p.Name); !ok || got != p {
			t.Fatalf("ByName(%s) = %v, %v", p.Name, got, ok)
		}
		// A preview sends the platform's UserAgent: it must be told as that
		// platform.
		if got := FromUserAgent(p.UserAgent); got != p {
			t.Fatalf("platform %s: its UserAgent %q is told as %s", p.Name, p.UserAgent, got.Name)
		}
		if strings.ContainsAny(p.Name, " |/") {
			t.Fatalf("platform name %q cannot be part of a cache key", p.Name)
		}
	}
	for _, r := range rules {
		if !seen[r.platform.Name] {
			t.Fatalf("rule for %s, which All does not list", r.platform.Name)
		}
		for _, m := range r.all {
			if string(m) != strings.ToLower(string(m)) {
				t.Fatalf("marker %q is not lower case", m)
			}
		}
	}
	if _, ok := ByName("nope"); ok {
		t.Fatal("ByName found an unknown platform")
	}
}

func TestFromUserAgentAllocatesNothing(t *testing.T) {
	ua := []byte("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36")
	if n := testing.AllocsPerRun(100, func() { FromUserAgent(ua) }); n != 0 {
		t.Fatalf("FromUserAgent allocates %v times", n)
	}
}

func BenchmarkFromUserAgent(b *testing.B) {
	ua := []byte("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36")
	for b.Loop() {
		FromUserAgent(ua)
	}
}

func FuzzFromUserAgent(f *testing.F) {
	f.Add("Twitterbot/1.0")
	f.Add("facebookexternalhit/1.1 Facebot Twitterbot/1.0")
	f.Fuzz(func(t *testing.T, ua string) {
		p := FromUserAgent(ua)
		if _, ok := ByName(p.Name); !ok {
			t.Fatalf("unknown platform %v", p)
		}
		if FromUserAgent([]byte(ua)) != p {
			t.Fatal("string and bytes disagree")
		}
	})
}
