#!/usr/bin/env bash
# scripts/certs.sh DIR: a throwaway CA (DIR/ca.crt) and certificates signed by it, each with
# its key, for the TLS tests and the bench: server (localhost and 127.0.0.1), other
# (redis.example.net), expired (for localhost, in 2020), client; and untrusted, for localhost
# but signed by a CA nobody trusts (rogue). Never for anything but tests.
set -euo pipefail

main() {
	local d=$1 name
	mkdir -p "$d/db"
	: >"$d/db/index"
	echo 01 >"$d/db/serial"
	printf '%s\n' '[ca]' 'default_ca = c' '[c]' 'database = db/index' 'serial = db/serial' \
		'new_certs_dir = db' 'default_md = sha256' 'policy = p' '[p]' 'commonName = supplied' \
		>"$d/ca.cnf"
	for name in ca rogue; do
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
			-keyout "$d/$name.key" -out "$d/$name.crt" -subj "/CN=redlock-run test $name" \
			2>/dev/null
	done
	leaf "$d" server ca "DNS:localhost,IP:127.0.0.1"
	leaf "$d" other ca "DNS:redis.example.net"
	leaf "$d" expired ca "DNS:localhost,IP:127.0.0.1" 20200101000000Z 20200201000000Z
	leaf "$d" untrusted rogue "DNS:localhost,IP:127.0.0.1"
	leaf "$d" client ca "DNS:client"
}

# leaf DIR NAME CA SAN [START END]: NAME.crt and NAME.key, signed by CA, for SAN.
leaf() {
	local d=$1 name=$2 ca=$3 san=$4
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$name" \
		-keyout "$d/$name.key" -out "$d/$name.csr" 2>/dev/null
	printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$san" >"$d/$name.ext"
	if (($# > 4)); then
		(cd "$d" && openssl ca -batch -config ca.cnf -cert "$ca.crt" -keyfile "$ca.key" \
			-in "$name.csr" -out "$name.crt" -startdate "$5" -enddate "$6" \
			-extfile "$name.ext" -notext 2>/dev/null)
	else
		openssl x509 -req -in "$d/$name.csr" -CA "$d/$ca.crt" -CAkey "$d/$ca.key" \
			-CAcreateserial -days 30 -extfile "$d/$name.ext" -out "$d/$name.crt" 2>/dev/null
	fi
}

main "$1"
