package ogplatform

import "bytes"

// Platform is a family of crawlers and the size, in output pixels, of the
// card image it shows.
type Platform struct {
	Name          string
	Width, Height int
	// UserAgent is one User-Agent its crawler really sends (a browser's
	// for Default): what a preview of the platform's card sends.
	UserAgent string
}

// Default is what every other client gets: 1200×630, the size Facebook,
// WhatsApp, Slack, Discord, Telegram and Reddit show.
var Default = Platform{"default", 1200, 630, "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36"}

// The platforms whose crawlers are told apart, and their sizes.
var (
	Facebook  = Platform{"facebook", 1200, 630, "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)"}
	Twitter   = Platform{"twitter", 1200, 600, "Twitterbot/1.0"}
	LinkedIn  = Platform{"linkedin", 1200, 627, "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)"}
	Slack     = Platform{"slack", 1200, 630, "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"}
	Discord   = Platform{"discord", 1200, 630, "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)"}
	Telegram  = Platform{"telegram", 1200, 630, "TelegramBot (like TwitterBot)"}
	WhatsApp  = Platform{"whatsapp", 1200, 630, "WhatsApp/2.23.20.0 A"}
	Pinterest = Platform{"pinterest", 1000, 1500, "Pinterest/0.2 (+https://www.pinterest.com/bot.html)"}
	Mastodon  = Platform{"mastodon", 1200, 675, "http.rb/5.1.1 (Mastodon/4.2.0; +https://mastodon.social/)"}
	Bluesky   = Platform{"bluesky", 1200, 627, "Mozilla/5.0 (compatible; Bluesky Cardyb/1.1; +mailto:support@bsky.app)"}
	Apple     = Platform{"apple", 1200, 628, "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0"}
	Reddit    = Platform{"reddit", 1200, 630, "Mozilla/5.0 (compatible; redditbot/1.0; +http://www.reddit.com/feedback)"}
	Instagram = Platform{"instagram", 1080, 1080, "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Instagram 300.0.0.0"}
)

// All lists every platform, Default first.
var All = []Platform{Default, Facebook, Twitter, LinkedIn, Slack, Discord, Telegram, WhatsApp,
	Pinterest, Mastodon, Bluesky, Apple, Reddit, Instagram}

// rule is one marker in a User-Agent; rules are tried in order, the first
// that matches wins.
type rule struct {
	all      [][]byte // every one of these, in lower case
	platform Platform
}

// rules are ordered from the most specific: Apple's link previews announce
// themselves as "facebookexternalhit/1.1 Facebot Twitterbot/1.0" beside a
// Safari token, so they come before Facebook and Twitter; Mastodon's
// fetcher says "(Mastodon/4.2.0; +https://instance/)" after its HTTP
// library's name.
var rules = []rule{
	{[][]byte{[]byte("applebot")}, Apple},
	{[][]byte{[]byte("facebookexternalhit"), []byte("twitterbot")}, Apple},
	{[][]byte{[]byte("bluesky cardyb")}, Bluesky},
	{[][]byte{[]byte("cardyb")}, Bluesky},
	{[][]byte{[]byte("mastodon/")}, Mastodon},
	{[][]byte{[]byte("telegrambot")}, Telegram}, // "TelegramBot (like TwitterBot)"
	{[][]byte{[]byte("linkedinbot")}, LinkedIn},
	{[][]byte{[]byte("twitterbot")}, Twitter},
	{[][]byte{[]byte("pinterestbot")}, Pinterest},
	{[][]byte{[]byte("pinterest/")}, Pinterest},
	{[][]byte{[]byte("instagram")}, Instagram},
	{[][]byte{[]byte("slackbot")}, Slack},
	{[][]byte{[]byte("slack-imgproxy")}, Slack},
	{[][]byte{[]byte("discordbot")}, Discord},
	{[][]byte{[]byte("whatsapp")}, WhatsApp},
	{[][]byte{[]byte("redditbot")}, Reddit},
	{[][]byte{[]byte("facebookexternalhit")}, Facebook},
	{[][]byte{[]byte("facebot")}, Facebook},
	{[][]byte{[]byte("meta-externalagent")}, Facebook},
}

// maxUserAgent bounds the part of a User-Agent that is read.
const maxUserAgent = 512

// FromUserAgent returns the platform of the crawler that sent ua, or
// Default. It allocates nothing, so the edge may call it on every hit.
func FromUserAgent[T string | []byte](ua T) Platform {
	var buf [maxUserAgent]byte
	n := min(len(ua), maxUserAgent)
	for i := 0; i < n; i++ {
		c := ua[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	lower := buf[:n]
	for _, r := range rules {
		ok := true
		for _, m := range r.all {
			if !bytes.Contains(lower, m) {
				ok = false
				break
			}
		}
		if ok {
			return r.platform
		}
	}
	return Default
}

// ByName returns the platform called name.
func ByName(name string) (Platform, bool) {
	for _, p := range All {
		if p.Name == name {
			return p, true
		}
	}
	return Platform{}, false
}
