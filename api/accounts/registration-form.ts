import countries from 'i18n-iso-countries';
import { z } from 'zod';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../../shared/accounts/passwords.ts';

/** The registration form's fields, as the HTML form posts them (strings; empty means not given). */
export const registerSchema = z.object({
  email: z.string().trim().max(254, 'at most 254 characters').pipe(z.email('enter a valid email address')),
  password: z
    .string()
    .min(MIN_PASSWORD_LENGTH, `at least ${MIN_PASSWORD_LENGTH} characters`)
    .max(MAX_PASSWORD_LENGTH, `at most ${MAX_PASSWORD_LENGTH} characters`),
  first_name: z.string().trim().min(1, 'enter your first name').max(100, 'at most 100 characters'),
  last_name: z.string().trim().min(1, 'enter your last name').max(100, 'at most 100 characters'),
  gender: z.enum(['', '1', '2', '3'], 'choose one of the options').default(''),
  birth_date: z
    .string()
    .trim()
    .default('')
    .refine(
      (v) =>
        v === '' ||
        (/^\d{4}-\d{2}-\d{2}$/.test(v) &&
          !Number.isNaN(Date.parse(v)) &&
          v >= '1900-01-01' &&
          v <= new Date().toISOString().slice(0, 10)),
      'a past date as YYYY-MM-DD',
    ),
  country: z
    .string()
    .trim()
    .toUpperCase()
    .default('')
    .refine((v) => v === '' || countries.isValid(v), 'a 2-letter ISO 3166-1 country code, such as FR'),
  language: z
    .string()
    .trim()
    .toLowerCase()
    .default('')
    .refine((v) => v === '' || /^[a-z]{2}$/.test(v), 'a 2-letter language code, such as en'),
});
