import { connect } from 'node:tls';
import { isIP } from 'node:net';
import { ExitWithCode } from '../errors.js';

/**
 * An https:// server whose certificate does not verify (self-signed, expired, another host's)
 * failed every request as `other`, with no word of why ("errors other: 164"). One TLS handshake
 * before the run names the cause and the way out. Any other failure (nothing listens, a timeout)
 * is left to the run, which counts it by kind.
 */
export async function checkCertificate(urlText: string, timeoutMs: number): Promise<void> {
  const url = new URL(urlText);
  if (url.protocol !== 'https:') return;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = Number(url.port === '' ? 443 : url.port);
  const refusal = await new Promise<string | undefined>((resolve) => {
    const socket = connect({ host, port, ...(isIP(host) === 0 ? { servername: host } : {}), timeout: timeoutMs });
    const done = (why: string | undefined) => {
      socket.destroy();
      resolve(why);
    };
    socket.once('secureConnect', () => done(undefined));
    socket.once('timeout', () => done(undefined));
    socket.once('error', (error: NodeJS.ErrnoException) => {
      // Node names a certificate it refused by OpenSSL's reason (DEPTH_ZERO_SELF_SIGNED_CERT,
      // CERT_HAS_EXPIRED, …) or ERR_TLS_CERT_ALTNAME_INVALID; socket errors are E*.
      const code = error.code ?? '';
      done(/CERT|SELF_SIGNED|UNABLE_TO|ISSUER|SIGNATURE/.test(code) ? `${code}: ${error.message}` : undefined);
    });
  });
  if (refusal !== undefined)
    throw new ExitWithCode(
      1,
      `batchline bench: the certificate of ${url.host} does not verify (${refusal}); no request was sent: pass --insecure to load it anyway, or trust its CA with NODE_EXTRA_CA_CERTS=ca.pem`,
    );
}
