import { describe, expect, it } from 'vitest';
import { argumentsCredentialProblem, looksLikeCredential, namesCredential, settingCredentialProblem, urlCredentialProblem } from './credential-guard.js';

describe('credential detection', () => {
  it.each(['GITHUB_TOKEN', 'API_KEY', 'x-api-key', 'apiKey', 'Authorization', 'Proxy-Authorization', 'Cookie', 'DB_PASSWORD', 'client_secret', 'AWS_SECRET_ACCESS_KEY', 'OPENAI_KEY', 'access_token', 'sig'])(
    'recognises %s as a credential name',
    (name) => expect(namesCredential(name)).toBe(true),
  );

  it.each(['MEMORY_FILE_PATH', 'MAX_TOKENS', 'GIT_AUTHOR_NAME', 'PORT', 'LOG_LEVEL', 'X-Request-Id', 'keyboard', 'monkey'])('does not flag %s', (name) => expect(namesCredential(name)).toBe(false));

  it.each(['Bearer abcdefghijklmnop', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abc', 'sk-abcdefghijklmnopqrstuvwx', 'ghp_0123456789abcdefghijABCDEFGHIJ', 'AKIAIOSFODNN7EXAMPLE', '-----BEGIN RSA PRIVATE KEY-----'])(
    'recognises the shape of %s',
    (value) => expect(looksLikeCredential(value)).toBe(true),
  );

  it.each(['/tmp/memory.json', 'stdio', 'https://example.com', '2025-06-18', 'basic'])('does not flag the value %s', (value) => expect(looksLikeCredential(value)).toBe(false));

  it('refuses credentials in URLs but not ordinary ones', () => {
    expect(urlCredentialProblem('https://user:pw@example.com/mcp')).toMatch(/user name or password/);
    expect(urlCredentialProblem('https://example.com/mcp?api_key=1')).toMatch(/api_key/);
    expect(urlCredentialProblem('https://example.com/mcp?x=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abc')).toMatch(/credential/);
    expect(urlCredentialProblem('http://127.0.0.1:3001/mcp?session=abc&page=2')).toBeUndefined();
  });

  it('refuses plain-valued credential settings but accepts connection references', () => {
    expect(settingCredentialProblem({ name: 'GITHUB_TOKEN', value: 'x' }, 'environment variable')).toMatch(/connection reference/);
    expect(settingCredentialProblem({ name: 'GITHUB_TOKEN', connectionRef: 'github' }, 'environment variable')).toBeUndefined();
    expect(settingCredentialProblem({ name: 'MEMORY_FILE_PATH', value: '/tmp/m.json' }, 'environment variable')).toBeUndefined();
  });

  it('refuses credentials on the command line', () => {
    expect(argumentsCredentialProblem(['server', '--token', 'abc'])).toMatch(/argument 2/);
    expect(argumentsCredentialProblem(['server', '--api-key=abc'])).toMatch(/argument 2/);
    expect(argumentsCredentialProblem(['server', 'sk-abcdefghijklmnopqrstuvwx'])).toMatch(/argument 2/);
    expect(argumentsCredentialProblem(['server', '--token-file', '/run/secrets/x'])).toBeUndefined();
    expect(argumentsCredentialProblem(['server', '--password', '--verbose'])).toBeUndefined();
    expect(argumentsCredentialProblem(['mcp-server-everything', 'stdio'])).toBeUndefined();
  });
});
